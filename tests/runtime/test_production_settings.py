"""Settings that cannot hurt: on a real network `tollway serve` and `tollway worker` refuse
to start, in one line naming the setting, when something would otherwise be generated
or missing; `.env` files are found in the working folder and in TOLLWAY_HOME, and the
test suite reads none."""

from __future__ import annotations

import asyncio
import base64
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.checkout import clean_env
from tollway._core.storage import sql
from tollway._runtime.settings import SettingsError, dotenv_paths, load_settings, read_env

TOLLWAY = Path(sys.executable).parent / "tollway"
REPO = Path(__file__).resolve().parents[2]
PAY_TO = "0x1111111111111111111111111111111111111111"
SEED = base64.b64encode(b"\x09" * 32).decode()
ACTIVE = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"


def production(**changes: str | None) -> dict[str, str]:
    """A complete base-sepolia configuration, with `changes` (None removes a setting)."""
    env = {
        "TOLLWAY_NETWORK": "base-sepolia",
        "TOLLWAY_PAY_TO": PAY_TO,
        "TOLLWAY_FACILITATOR_URL": "http://127.0.0.1:9",
        "TOLLWAY_RECEIPT_KEY": SEED,
        "TOLLWAY_OPERATOR_TOKEN": "tw_op_production",
        "TOLLWAY_OFFLINE": "1",
    }
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def start(tmp_path: Path, command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    home = tmp_path / "home"
    return subprocess.run(
        [str(TOLLWAY), *command],
        env=clean_env(TOLLWAY_HOME=str(home), **env),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def one_line(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("tollway: "), lines[0]
    assert "serving on" not in done.stdout and "Traceback" not in done.stderr
    return lines[0]


REFUSALS = [
    (
        "serve",
        {"TOLLWAY_NETWORK": "base", "TOLLWAY_CHAIN_RPC_URL": "http://127.0.0.1:9", "TOLLWAY_PAY_TO": None},
        "TOLLWAY_PAY_TO",
    ),
    ("serve", {"TOLLWAY_FACILITATOR_URL": None}, "TOLLWAY_FACILITATOR_URL"),
    ("serve", {"TOLLWAY_NETWORK": "base"}, "TOLLWAY_CHAIN_RPC_URL"),
    ("serve", {"TOLLWAY_RECEIPT_KEY": None}, "TOLLWAY_RECEIPT_KEY"),
    ("worker", {"TOLLWAY_OPERATOR_TOKEN": None}, "TOLLWAY_OPERATOR_TOKEN"),
    ("worker", {"TOLLWAY_PAY_TO": "0x12"}, "TOLLWAY_PAY_TO"),
    ("serve", {"TOLLWAY_RECEIPT_KEY": "bm90IDMyIGJ5dGVz"}, "TOLLWAY_RECEIPT_KEY"),
    ("serve", {"TOLLWAY_DATABASE_URL": "mysql://db/tollway"}, "TOLLWAY_DATABASE_URL"),
]


@pytest.mark.parametrize(("command", "changes", "setting"), REFUSALS, ids=[f"{c}-{s}" for c, _, s in REFUSALS])
def test_a_real_network_refuses_to_start_without_a_setting(tmp_path, command, changes, setting):
    done = start(tmp_path, [command], production(**changes))
    assert done.returncode == 2
    line = one_line(done)
    assert setting in line
    # nothing was generated into the home folder
    home = tmp_path / "home"
    generated = {"dev_wallet.key", "receipt_key.seed", "operator_token"}
    assert not (home.exists() and generated & {p.name for p in home.iterdir()})


def test_every_missing_setting_is_named_in_the_one_line(tmp_path):
    done = start(tmp_path, ["serve"], {"TOLLWAY_NETWORK": "base", "TOLLWAY_OFFLINE": "1"})
    assert done.returncode == 2
    line = one_line(done)
    for name in (
        "TOLLWAY_PAY_TO",
        "TOLLWAY_FACILITATOR_URL",
        "TOLLWAY_CHAIN_RPC_URL",
        "TOLLWAY_RECEIPT_KEY",
        "TOLLWAY_OPERATOR_TOKEN",
    ):
        assert name in line
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize("command", [["serve", "--processes", "2"], ["worker"]], ids=["processes", "worker"])
def test_several_processes_on_the_embedded_database_are_refused_on_a_real_network(tmp_path, command):
    done = start(tmp_path, command, production())
    assert done.returncode == 2
    line = one_line(done)
    assert "TOLLWAY_DATABASE_URL" in line and "PostgreSQL" in line


def test_an_unreachable_database_is_one_line_before_serving(tmp_path):
    done = start(tmp_path, ["serve"], {"TOLLWAY_DATABASE_URL": "postgres://postgres@127.0.0.1:9/none"})
    assert done.returncode == 1
    line = one_line(done)
    assert "127.0.0.1:9/none unreachable" in line


def test_the_local_network_still_generates_what_it_needs(tmp_path):
    settings = load_settings({"TOLLWAY_HOME": str(tmp_path / "home")})
    assert settings.network == "local" and settings.operator_token_generated
    assert {p.name for p in (tmp_path / "home").iterdir()} >= {"dev_wallet.key", "receipt_key.seed", "operator_token"}


def test_load_settings_names_a_malformed_number_without_a_traceback(tmp_path):
    with pytest.raises(SettingsError, match="TOLLWAY_RECONCILE_INTERVAL_S"):
        load_settings({"TOLLWAY_HOME": str(tmp_path / "home"), "TOLLWAY_RECONCILE_INTERVAL_S": "soon"})


@pytest.mark.parametrize("value", ["1", "1001", "many", "-3"])
def test_a_pool_size_out_of_range_is_named(tmp_path, value):
    with pytest.raises(SettingsError, match="TOLLWAY_DB_POOL_MAX must be a whole number from 2 to 1000"):
        load_settings({"TOLLWAY_HOME": str(tmp_path / "home"), "TOLLWAY_DB_POOL_MAX": value})


@pytest.mark.parametrize("db_kind", ["postgres"], indirect=True)
async def test_one_process_never_holds_more_connections_than_its_pool_max(kernel_factory, tmp_path):
    kernel = await kernel_factory(env={"TOLLWAY_DB_POOL_MAX": "3"})
    assert load_settings({"TOLLWAY_HOME": str(tmp_path / "home")}).db_pool_max == 20  # the default
    seen: list[int] = []

    async def busy() -> None:
        await sql.fetch("SELECT pg_sleep(0.2)")

    async def count() -> None:
        for _ in range(6):
            await asyncio.sleep(0.05)
            async with kernel.db.engine.pool.acquire() as conn:  # one of the three: counts itself
                seen.append(await conn.fetchval(ACTIVE))

    await asyncio.gather(*[busy() for _ in range(12)], count())
    # the pool's three, and the event listener's own connection
    assert max(seen) <= 4 and kernel.db.engine.pool.get_max_size() == 3


# -- .env files ------------------------------------------------------------------


def test_dotenv_is_read_from_the_working_folder_and_from_tollway_home(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (home / ".env").write_text("TOLLWAY_A=home\nTOLLWAY_B=home\nTOLLWAY_C=home\n")
    (work / ".env").write_text("TOLLWAY_B=work\nTOLLWAY_C=work\n")
    env = read_env({"TOLLWAY_HOME": str(home), "TOLLWAY_C": "process"}, cwd=work)
    assert (env["TOLLWAY_A"], env["TOLLWAY_B"], env["TOLLWAY_C"]) == ("home", "work", "process")
    # a command started anywhere else (an MCP client's `tollway mcp`) still finds the home's
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert read_env({"TOLLWAY_HOME": str(home)}, cwd=elsewhere)["TOLLWAY_A"] == "home"


def test_tollway_home_named_in_the_working_folders_dotenv_brings_its_own(tmp_path):
    home, work = tmp_path / "deployment", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (work / ".env").write_text(f"TOLLWAY_HOME={home}\n")
    (home / ".env").write_text("TOLLWAY_NETWORK=base-sepolia\n")
    assert read_env({}, cwd=work)["TOLLWAY_NETWORK"] == "base-sepolia"
    assert read_env({"TOLLWAY_DOTENV": "0"}, cwd=work).get("TOLLWAY_NETWORK") is None


def test_a_home_dotenv_reaches_a_process_started_elsewhere(tmp_path):
    """`tollway serve` from another folder reads TOLLWAY_HOME's .env: its refusal names
    the settings the home's .env left out."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".env").write_text(f"TOLLWAY_NETWORK=base-sepolia\nTOLLWAY_PAY_TO={PAY_TO}\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in clean_env(TOLLWAY_HOME=str(home)).items() if k != "TOLLWAY_DOTENV"}
    done = subprocess.run([str(TOLLWAY), "serve"], env=env, cwd=elsewhere, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    line = one_line(done)
    assert "base-sepolia" in line and "TOLLWAY_FACILITATOR_URL" in line and "TOLLWAY_PAY_TO" not in line


def test_the_test_suite_reads_no_dotenv(tmp_path):
    import os

    assert os.environ.get("TOLLWAY_DOTENV") == "0"
    (tmp_path / ".env").write_text("TOLLWAY_LEAK=yes\n")
    assert dotenv_paths(cwd=tmp_path) == []
    # nor do the processes the suite starts (their environment keeps the switch)
    done = subprocess.run(
        [sys.executable, "-c", "from tollway._runtime.settings import read_env; print(read_env().get('TOLLWAY_LEAK'))"],
        env=clean_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.strip() == "None", done.stderr


def test_dotenv_files_are_ignored_by_git():
    for name in (".env", "plugins/x/.env", ".tollway/.env", ".env.production"):
        done = subprocess.run(["git", "check-ignore", "-q", name], cwd=REPO)
        assert done.returncode == 0, f"{name} is not in .gitignore"
    assert subprocess.run(["git", "check-ignore", "-q", "deploy/tollway.env.example"], cwd=REPO).returncode == 1
