"""`tollway mcp install <client>` end to end: for each of the four clients the file lands
where the client reads it (under a temporary HOME and XDG_CONFIG_HOME: nothing in the real
home is touched), in the client's format, and the server it describes starts from another
folder, exactly as the file says, through the official SDK's stdio client, and lists its
tools (for one of them only the `--tools` selection). The four servers start at once: each
start loads every installed plugin."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from eth_account import Account
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from tollway._runtime.cli import main

# client -> (the file it reads under HOME (~) or XDG_CONFIG_HOME ($XDG), its servers' key, entries typed "stdio")
CLIENTS = {
    "claude-desktop": ("$XDG/Claude/claude_desktop_config.json", "mcpServers", False),
    "cursor": ("~/.cursor/mcp.json", "mcpServers", False),
    "vscode": ("$XDG/Code/User/mcp.json", "servers", True),
    "claude-code": ("~/.claude.json", "mcpServers", True),
}
SELECTED = {"claude-code": "sanctions,vehicle_recalls"}  # one install carries a selection
SELECTED_TOOLS = {"company_sanctions", "person_sanctions", "vehicle_recalls", "describe_tool"}


@pytest.fixture
def isolated(tmp_path, monkeypatch) -> dict[str, Path]:
    """A HOME, XDG_CONFIG_HOME and APPDATA of the test's own, run from a project folder."""
    folders = {name: tmp_path / name for name in ("home", "xdg", "appdata", "project", "elsewhere")}
    for folder in folders.values():
        folder.mkdir()
    monkeypatch.setenv("HOME", str(folders["home"]))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folders["xdg"]))
    monkeypatch.setenv("APPDATA", str(folders["appdata"]))
    for name in ("TOLLWAY_AGENT_KEY", "TOLLWAY_DATABASE_URL", "TOLLWAY_NETWORK", "TOLLWAY_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOLLWAY_OFFLINE", "1")  # carried into the entry: the servers download nothing
    monkeypatch.chdir(folders["project"])
    return folders


def where(pattern: str, folders: dict[str, Path]) -> Path:
    return Path(pattern.replace("~", str(folders["home"])).replace("$XDG", str(folders["xdg"])))


def entry_of(path: Path, client: str, name: str = "tollway") -> dict[str, Any]:
    """Our server's entry as the client reads it."""
    _, key, typed = CLIENTS[client]
    entry = json.loads(path.read_text())[key][name]
    assert (entry.get("type") == "stdio") if typed else ("type" not in entry), entry
    return entry


async def served_tools(entry: dict[str, Any], cwd: Path) -> tuple[set[str], str | None]:
    """Start the server exactly as the entry says, from `cwd`: its tools, and the error of calling `solve`."""
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"], cwd=str(cwd))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = {t.name for t in (await session.list_tools()).tools}
        refused = None
        if "solve" not in listed:
            try:
                await session.call_tool("solve", {})
            except MCPError as exc:
                refused = str(exc)
    return listed, refused


async def test_each_client_file_starts_the_server_it_describes(isolated, monkeypatch, capsys):
    wallet = Account.create()
    entries: dict[str, dict[str, Any]] = {}
    for client, (pattern, _, _) in CLIENTS.items():
        home = isolated["home"] / f"tollway-{client}"  # a database each: the four start at once
        monkeypatch.setenv("TOLLWAY_HOME", str(home))
        who = ["--agent-key", wallet.key.hex()] if client in ("cursor", "vscode") else ["--token", "tw_at_test"]
        tools = ["--tools", SELECTED[client]] if client in SELECTED else []
        assert main(["mcp", "install", client, *who, *tools]) == 0
        assert (
            main(["mcp", "install", client, *who, *tools, "--path", str(isolated["project"] / f"{client}.json")]) == 0
        )
        path = where(pattern, isolated)
        assert path.stat().st_mode & 0o777 == 0o600
        entries[client] = entry_of(path, client)
        assert entry_of(isolated["project"] / f"{client}.json", client) == entries[client]
        assert entries[client]["env"]["TOLLWAY_HOME"] == str(home)
    out = capsys.readouterr().out
    assert "added MCP server 'tollway' in Claude Desktop's" in out and "readable by you only" in out
    for client, entry in entries.items():
        assert Path(entry["command"]).is_absolute() and Path(entry["command"]).name == "tollway"
        assert entry["args"] == ["mcp", *(["--tools", SELECTED[client]] if client in SELECTED else [])]
        key = wallet.key.hex() if client in ("cursor", "vscode") else "tw_at_test"
        assert entry["env"] == {
            "TOLLWAY_HOME": entry["env"]["TOLLWAY_HOME"],
            "TOLLWAY_OFFLINE": "1",
            "TOLLWAY_AGENT_KEY": key,
        }

    served: dict[str, tuple[set[str], str | None]] = {}

    async def serve(client: str) -> None:
        served[client] = await served_tools(entries[client], isolated["elsewhere"])

    with anyio.fail_after(240):
        async with anyio.create_task_group() as group:
            for client in CLIENTS:
                group.start_soon(serve, client)
    for client, (listed, refused) in served.items():
        if client in SELECTED:
            assert listed == SELECTED_TOOLS
            assert refused == "Unknown tool: solve"  # an unselected tool is no tool
        else:
            assert {"solve", "company_sanctions", "vehicle_recalls", "balance", "describe_tool"} <= listed
    assert not os.listdir(isolated["elsewhere"])  # the servers wrote nothing where they were started
