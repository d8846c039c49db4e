"""The systemd units of deploy/ (docs/deploy.md): `systemd-analyze verify` accepts each
with no warning about our files, once rendered with this checkout's `tollway` in place
of the documented /opt/tollway/.venv/bin/tollway (verify needs ExecStart to exist); and
the environment file example is settings `tollway serve` accepts."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dotenv import dotenv_values

from tollway._runtime.settings import SettingsError, load_settings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SHIPPED_TOLLWAY = "/opt/tollway/.venv/bin/tollway"
TOLLWAY = str(Path(sys.executable).parent / "tollway")
UNITS = ("tollway-serve.service", "tollway-worker@.service", "tollway-migrate.service")

needs_systemd = pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")


def render(folder: Path, names=UNITS, extra: str = "") -> list[Path]:
    folder.mkdir(exist_ok=True)
    paths = []
    for name in names:
        text = (DEPLOY / name).read_text()
        assert SHIPPED_TOLLWAY in text, name
        path = folder / name
        path.write_text(text.replace(SHIPPED_TOLLWAY, TOLLWAY).replace("[Service]\n", f"[Service]\n{extra}", 1))
        paths.append(path)
    return paths


def verify(paths: list[Path]) -> tuple[int, list[str]]:
    """`systemd-analyze verify` of `paths`: its exit code and the lines it printed about them
    (it may also speak of the machine's own units, which are not ours to judge)."""
    done = subprocess.run(["systemd-analyze", "verify", *map(str, paths)], capture_output=True, text=True, timeout=120)
    ours = re.compile("|".join(re.escape(p.name) for p in paths) + "|" + re.escape(str(paths[0].parent)))
    return done.returncode, [line for line in (done.stdout + done.stderr).splitlines() if ours.search(line)]


@needs_systemd
def test_every_unit_verifies_without_a_warning(tmp_path):
    for path in render(tmp_path / "units"):
        code, said = verify([path])
        assert (code, said) == (0, []), path.name


@needs_systemd
def test_verify_would_see_a_mistake(tmp_path):
    """The check above is not blind: a misspelt directive is reported against the unit."""
    code, said = verify(render(tmp_path / "bad", names=("tollway-serve.service",), extra="NoNewPrivilege=yes\n"))
    assert code == 0 and any("NoNewPrivilege" in line for line in said)


def test_units_run_as_their_own_user_with_the_hardening_docs_describe():
    for name in UNITS:
        text = (DEPLOY / name).read_text()
        for line in (
            "User=tollway",
            "EnvironmentFile=/etc/tollway/tollway.env",
            "NoNewPrivileges=yes",
            "ProtectSystem=strict",
            "ReadWritePaths=/var/lib/tollway",
            "PrivateTmp=yes",
        ):
            assert line in text.splitlines(), (name, line)
    for name in ("tollway-serve.service", "tollway-worker@.service"):
        lines = (DEPLOY / name).read_text().splitlines()
        assert {
            "Restart=on-failure",
            "KillSignal=SIGTERM",
            "After=network-online.target tollway-migrate.service",
        } <= set(lines)
    worker = (DEPLOY / "tollway-worker@.service").read_text()
    stop_s = int(re.search(r"^TimeoutStopSec=(\d+)s$", worker, re.M).group(1))
    lease_s = float(re.search(r"--lease (\d+)", worker).group(1))
    assert stop_s > lease_s  # a stopping worker is not killed within a lease


def test_the_environment_example_is_accepted(tmp_path):
    env = {k: v for k, v in dotenv_values(DEPLOY / "tollway.env.example").items() if v is not None}
    assert env["TOLLWAY_HOME"] == "/var/lib/tollway" and env["TOLLWAY_NETWORK"] == "base"
    # the secrets are left for the operator to generate: until then a start is refused, naming them
    with pytest.raises(SettingsError) as refused:
        load_settings({**env, "TOLLWAY_HOME": str(tmp_path / "home")})
    assert "TOLLWAY_RECEIPT_KEY, TOLLWAY_OPERATOR_TOKEN" in str(refused.value)
    env.update(TOLLWAY_RECEIPT_KEY=base64.b64encode(b"\x03" * 32).decode(), TOLLWAY_OPERATOR_TOKEN="tw_op_generated")
    settings = load_settings({**env, "TOLLWAY_HOME": str(tmp_path / "home")})
    assert settings.trusted_proxies == ("127.0.0.1/32",) and settings.database_url.startswith("postgres://")
