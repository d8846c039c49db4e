"""`tollway mcp install` without starting a server: where each client's file is on each
operating system, --print, merging, the secret's permissions, and the one-line refusals
that leave a file alone (tests/mcp/test_mcp_install.py starts what the files describe)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from eth_account import Account

from tollway._runtime.cli import main
from tollway._runtime.mcp_install import CLIENTS, config_path, tollway_command

TOKEN = "tw_at_unit"


@pytest.fixture
def isolated(tmp_path, monkeypatch) -> Path:
    for name in ("home", "xdg", "appdata", "project"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("APPDATA", str(tmp_path / "appdata"))
    for name in ("TOLLWAY_AGENT_KEY", "TOLLWAY_DATABASE_URL", "TOLLWAY_NETWORK", "TOLLWAY_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOLLWAY_HOME", str(tmp_path / "tollway-home"))
    monkeypatch.chdir(tmp_path / "project")
    return tmp_path


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize(
    ("client", "scope", "platform", "expected"),
    [
        ("claude-desktop", None, "darwin", "H/Library/Application Support/Claude/claude_desktop_config.json"),
        ("claude-desktop", None, "win32", "A/Claude/claude_desktop_config.json"),
        ("claude-desktop", None, "linux", "X/Claude/claude_desktop_config.json"),
        ("cursor", None, "darwin", "H/.cursor/mcp.json"),
        ("cursor", "project", "linux", "P/.cursor/mcp.json"),
        ("vscode", None, "darwin", "H/Library/Application Support/Code/User/mcp.json"),
        ("vscode", None, "win32", "A/Code/User/mcp.json"),
        ("vscode", None, "linux", "X/Code/User/mcp.json"),
        ("vscode", "project", "win32", "P/.vscode/mcp.json"),
        ("claude-code", None, "win32", "H/.claude.json"),
        ("claude-code", "project", "darwin", "P/.mcp.json"),
    ],
)
def test_each_clients_file_per_os_and_scope(tmp_path, client, scope, platform, expected):
    env = {"HOME": str(tmp_path / "H"), "APPDATA": str(tmp_path / "A"), "XDG_CONFIG_HOME": str(tmp_path / "X")}
    path = config_path(CLIENTS[client], scope, env=env, platform=platform, project=tmp_path / "P")
    assert path == tmp_path / expected


def test_print_shows_the_entry_and_writes_nothing(isolated, capsys):
    assert main(["mcp", "install", "vscode", "--token", TOKEN, "--print", "--name", "paid"]) == 0
    shown = json.loads(capsys.readouterr().out)
    entry = shown["servers"]["paid"]
    assert entry["type"] == "stdio" and entry["command"] == tollway_command() and entry["args"] == ["mcp"]
    assert entry["env"] == {"TOLLWAY_HOME": str(isolated / "tollway-home"), "TOLLWAY_AGENT_KEY": TOKEN}
    assert files_under(isolated) == []  # no client file, no TOLLWAY_HOME


def test_merge_keeps_other_servers_and_settings_and_replaces_only_ours(isolated, capsys):
    path = isolated / "home" / ".claude.json"
    other = {"command": "npx", "args": ["-y", "other-server"]}
    path.write_text(json.dumps({"numStartups": 7, "mcpServers": {"other": other, "tollway": {"command": "old"}}}))
    path.chmod(0o644)
    assert main(["mcp", "install", "claude-code", "--token", TOKEN]) == 0
    assert "replaced MCP server 'tollway'" in capsys.readouterr().out
    wallet = Account.create()
    assert main(["mcp", "install", "claude-code", "--agent-key", wallet.key.hex(), "--name", "tollway-wallet"]) == 0
    doc = json.loads(path.read_text())
    assert doc["numStartups"] == 7
    assert list(doc["mcpServers"]) == ["other", "tollway", "tollway-wallet"]
    assert doc["mcpServers"]["other"] == other
    assert doc["mcpServers"]["tollway"]["env"]["TOLLWAY_AGENT_KEY"] == TOKEN
    assert doc["mcpServers"]["tollway-wallet"]["env"]["TOLLWAY_AGENT_KEY"] == wallet.key.hex()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # it holds a secret
    assert files_under(isolated / "home") == [".claude.json"]  # no temporary file left beside it


def test_a_symlinked_file_is_written_through_its_link(isolated):
    real = isolated / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text('{"mcpServers": {}}')
    link = isolated / "home" / ".cursor" / "mcp.json"
    link.parent.mkdir()
    link.symlink_to(real)
    assert main(["mcp", "install", "cursor", "--token", TOKEN]) == 0
    assert link.is_symlink() and "tollway" in json.loads(real.read_text())["mcpServers"]


def test_project_scope_warns_about_version_control(isolated, capsys):
    assert main(["mcp", "install", "cursor", "--scope", "project", "--token", TOKEN]) == 0
    assert (isolated / "project" / ".cursor" / "mcp.json").is_file()
    assert "keep it out of version control" in capsys.readouterr().out
    assert main(["mcp", "install", "claude-desktop", "--scope", "project", "--token", TOKEN]) == 2
    assert "Claude Desktop has no project scope" in capsys.readouterr().err


def test_settings_that_pick_the_service_are_carried(isolated, monkeypatch, capsys):
    monkeypatch.delenv("TOLLWAY_DOTENV")  # this test reads a .env on purpose (the suite reads none)
    (isolated / "project" / ".env").write_text(
        "TOLLWAY_DATABASE_URL=postgres://db/tollway\nTOLLWAY_PAYOUT_KEY=0xsecret\n"
    )
    monkeypatch.setenv("TOLLWAY_NETWORK", "base-sepolia")
    assert main(["mcp", "install", "cursor", "--token", TOKEN, "--print", "--env", "TOLLWAY_MCP_OUTPUT_CAP=20000"]) == 0
    env = json.loads(capsys.readouterr().out)["mcpServers"]["tollway"]["env"]
    assert env == {
        "TOLLWAY_HOME": str(isolated / "tollway-home"),
        "TOLLWAY_DATABASE_URL": "postgres://db/tollway",
        "TOLLWAY_NETWORK": "base-sepolia",
        "TOLLWAY_MCP_OUTPUT_CAP": "20000",
        "TOLLWAY_AGENT_KEY": TOKEN,
    }


def test_the_key_comes_from_the_environment_too(isolated, monkeypatch, capsys):
    monkeypatch.setenv("TOLLWAY_AGENT_KEY", TOKEN)
    assert main(["mcp", "install", "cursor", "--print"]) == 0
    assert json.loads(capsys.readouterr().out)["mcpServers"]["tollway"]["env"]["TOLLWAY_AGENT_KEY"] == TOKEN


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["windsurf", "--token", TOKEN],
            "unknown MCP client 'windsurf' (known: claude-code, claude-desktop, cursor, vscode)",
        ),
        (["cursor"], "no paying identity: pass --token tw_at_… or --agent-key"),
        (["cursor", "--token", "0xabc"], "--token must be an access token (tw_at_…)"),
        (
            ["cursor", "--agent-key", "nonsense"],
            "the agent key must be an access token (tw_at_…) or a 0x wallet private key",
        ),
        (["cursor", "--token", TOKEN, "--env", "NOEQUALS"], "--env wants NAME=VALUE, not 'NOEQUALS'"),
    ],
)
def test_refusals_are_one_line(isolated, capsys, argv, message):
    assert main(["mcp", "install", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tollway: mcp install: ") and message in err and err.count("\n") == 1
    assert files_under(isolated) == []


@pytest.mark.parametrize("content", ['{"mcpServers": {"other": {}},}', "[1, 2]", '{"servers": []}', "// a comment\n{}"])
def test_a_file_it_cannot_parse_is_never_overwritten(isolated, capsys, content):
    path = isolated / "xdg" / "Code" / "User" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text(content)
    assert main(["mcp", "install", "vscode", "--token", TOKEN]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tollway: mcp install: {path}") and "nothing written" in err and err.count("\n") == 1
    assert path.read_text() == content
    assert files_under(path.parent) == ["mcp.json"]


def test_an_unreadable_file_is_refused(isolated, capsys):
    folder = isolated / "a-folder.json"
    folder.mkdir()
    assert main(["mcp", "install", "cursor", "--token", TOKEN, "--path", str(folder)]) == 2
    assert capsys.readouterr().err.startswith(f"tollway: mcp install: cannot read {folder}: ")


def test_unknown_tools_are_refused_at_install_and_by_the_server(isolated, capsys):
    assert main(["mcp", "install", "cursor", "--token", TOKEN, "--tools", "sanctions,vehicle_recals", "--print"]) == 2
    err = capsys.readouterr().err
    assert "--tools: no tool or family 'vehicle_recals' (did you mean vehicle_recalls?)" in err and err.count("\n") == 1
    # `tollway mcp` refuses before it reads stdin: one line, exit 2
    assert main(["mcp", "--tools", "sanction"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tollway: --tools: no tool or family 'sanction' (did you mean sanctions?)")
    assert err.count("\n") == 1


def test_the_command_is_the_running_tollway(tmp_path, monkeypatch):
    script = tmp_path / "bin" / "tollway"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert tollway_command(str(script)) == str(script)
    monkeypatch.setenv("PATH", str(script.parent))
    assert tollway_command("tollway", executable=str(tmp_path / "nowhere" / "python")) == str(script)
    # run as `python -m ...`: the tollway beside the interpreter (a virtualenv's bin)
    beside = tollway_command("/x/cli.py")
    assert os.path.isabs(beside) and Path(beside).name == "tollway"


def test_the_tools_flag_counts_before_install_too(isolated, capsys):
    # `tollway mcp --tools X install ...`: the subcommand's own default must not overwrite X
    assert main(["mcp", "--tools", "sanctions", "install", "vscode", "--token", TOKEN, "--print"]) == 0
    assert json.loads(capsys.readouterr().out)["servers"]["tollway"]["args"] == ["mcp", "--tools", "sanctions"]
    assert main(["mcp", "--tools", "sanction", "install", "vscode", "--token", TOKEN, "--print"]) == 2
    assert "no tool or family 'sanction'" in capsys.readouterr().err
