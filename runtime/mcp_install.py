"""`tollway mcp install <client>`: write the `tollway mcp` server into an MCP client's
configuration file (docs/mcp.md "Installing in a client").

Each client reads a JSON file of its own: where it is (per operating system, and per scope
where the client has a user-wide and a project file) and under which key its servers are
(`mcpServers`, VS Code's `servers`) is in `CLIENTS`. The entry starts this installation's
`tollway` by its absolute path with the absolute TOLLWAY_HOME and the paying identity
(TOLLWAY_AGENT_KEY) in its environment, so it works whatever folder the client starts it
in. The file is merged (other servers and settings kept, only our entry replaced), written
atomically and readable by its owner only: it holds a secret. A file that is not JSON is
never overwritten.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tollway._mcp_server.stdio import AGENT_KEY_ENV

DEFAULT_NAME = "tollway"
# Settings that decide which service the server joins (database, network, downloads): a
# client starts the server in a folder of its own, where this folder's `.env` is not read.
CARRIED_SETTINGS = ("TOLLWAY_DATABASE_URL", "TOLLWAY_NETWORK", "TOLLWAY_OFFLINE")


class InstallError(Exception):
    """Refused: the message is one line, and nothing was written."""


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or env.get("USERPROFILE") or Path.home())


def _app_config(env: Mapping[str, str], platform: str) -> Path:
    """Where desktop applications keep their settings: ~/Library/Application Support (macOS),
    %APPDATA% (Windows), $XDG_CONFIG_HOME or ~/.config (Linux and the rest)."""
    if platform == "darwin":
        return _home(env) / "Library" / "Application Support"
    if platform == "win32":
        return Path(env["APPDATA"]) if env.get("APPDATA") else _home(env) / "AppData" / "Roaming"
    return Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else _home(env) / ".config"


@dataclasses.dataclass(frozen=True)
class ClientFormat:
    title: str
    servers_key: str  # the top-level object holding the servers by name
    user: tuple[str, str]  # the user-wide file: ("home" or "app" (_app_config), path below it)
    project: str | None  # the file in a project's folder, when the client reads one
    typed: bool  # entries say "type": "stdio"
    restart: str  # how the client loads the new entry

    @property
    def scopes(self) -> tuple[str, ...]:
        return ("user", "project") if self.project else ("user",)


CLIENTS: dict[str, ClientFormat] = {
    "claude-desktop": ClientFormat(
        "Claude Desktop",
        "mcpServers",
        ("app", "Claude/claude_desktop_config.json"),
        None,
        typed=False,
        restart="quit and reopen Claude Desktop to load it",
    ),
    "cursor": ClientFormat(
        "Cursor",
        "mcpServers",
        ("home", ".cursor/mcp.json"),
        ".cursor/mcp.json",
        typed=False,
        restart="restart Cursor (or switch the server on in its MCP settings) to load it",
    ),
    "vscode": ClientFormat(
        "VS Code",
        "servers",
        ("app", "Code/User/mcp.json"),
        ".vscode/mcp.json",
        typed=True,
        restart="VS Code loads it when you start it from MCP: List Servers (or restart VS Code)",
    ),
    "claude-code": ClientFormat(
        "Claude Code",
        "mcpServers",
        ("home", ".claude.json"),
        ".mcp.json",
        typed=True,
        restart="a new Claude Code session loads it (`/mcp` lists it)",
    ),
}


def client_format(name: str) -> ClientFormat:
    found = CLIENTS.get(name.lower())
    if found is None:
        raise InstallError(f"unknown MCP client {name!r} (known: {', '.join(sorted(CLIENTS))})")
    return found


def _check_scope(client: ClientFormat, scope: str) -> None:
    if scope not in client.scopes:
        raise InstallError(f"{client.title} has no {scope} scope (it has: {', '.join(client.scopes)})")


def config_path(
    client: ClientFormat,
    scope: str | None,
    *,
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
    project: Path | None = None,
) -> Path:
    """The client's configuration file for `scope` (None: `user`), on `platform` (sys.platform)."""
    scope = scope or "user"
    _check_scope(client, scope)
    if scope == "project":
        assert client.project is not None
        return ((project or Path.cwd()) / client.project).absolute()
    env = os.environ if env is None else env
    base, below = client.user
    folder = _app_config(env, platform or sys.platform) if base == "app" else _home(env)
    return (folder / below).absolute()


def tollway_command(argv0: str | None = None, executable: str | None = None) -> str:
    """The absolute path of the `tollway` executable running now: argv[0] when it is
    `tollway`, else the one beside this interpreter (a virtualenv's bin), else on PATH."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    names = ("tollway.exe", "tollway") if sys.platform == "win32" else ("tollway",)
    if argv0 and Path(argv0).name in names:
        found = argv0 if os.sep in argv0 or (os.altsep and os.altsep in argv0) else shutil.which(argv0)
        if found and Path(found).is_file():
            return os.path.abspath(found)
    folder = Path(executable or sys.executable).parent  # not resolved: a venv's python is a link
    for name in names:
        if (folder / name).is_file():
            return os.path.abspath(folder / name)
    found = shutil.which("tollway")
    if found:
        return os.path.abspath(found)
    raise InstallError("cannot find the tollway executable (not beside this Python, not on PATH)")


def server_entry(
    client: ClientFormat, *, command: str, home: Path, agent_key: str, tools: str | None, extra_env: Mapping[str, str]
) -> dict[str, Any]:
    """Our server's entry in the client's format."""
    args = ["mcp"]
    if tools:
        args += ["--tools", tools]
    env = {"TOLLWAY_HOME": str(home), **extra_env, AGENT_KEY_ENV: agent_key}
    entry: dict[str, Any] = {"type": "stdio"} if client.typed else {}
    entry.update({"command": command, "args": args, "env": env})
    return entry


def read_config(path: Path, servers_key: str) -> dict[str, Any]:
    """The file's JSON object ({} when there is no file), or InstallError when it cannot be
    read or is not a JSON object whose `servers_key` is an object: such a file is left alone."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InstallError(f"cannot read {path}: {reason}; nothing written") from None
    if not text.strip():
        return {}
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InstallError(
            f"{path} is not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno}); nothing written: "
            "fix it, or use --print and add the entry yourself"
        ) from None
    if not isinstance(doc, dict):
        raise InstallError(f"{path} is JSON but not an object; nothing written")
    if not isinstance(doc.get(servers_key, {}), dict):
        raise InstallError(f"{path}: {servers_key!r} is not an object; nothing written")
    return doc


def merged(doc: dict[str, Any], servers_key: str, name: str, entry: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """`doc` with `entry` as server `name` (replacing only that one); and whether it replaced one."""
    servers = dict(doc.get(servers_key) or {})
    replaced = name in servers
    servers[name] = entry
    return {**doc, servers_key: servers}, replaced


def write_private(path: Path, text: str) -> None:
    """Replace `path` with `text` atomically (a temporary file beside it, renamed over it),
    readable and writable by its owner only. A symbolic link is followed, not replaced."""
    target = path.resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def parse_env_pairs(pairs: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise InstallError(f"--env wants NAME=VALUE, not {pair!r}")
        out[name.strip()] = value
    return out


@dataclasses.dataclass(frozen=True)
class Installed:
    path: Path | None  # None: printed, not written
    text: str
    replaced: bool
    others: int  # other servers kept in the file


def install(
    client_name: str,
    *,
    agent_key: str,
    home: Path,
    name: str = DEFAULT_NAME,
    tools: str | None = None,
    scope: str | None = None,
    path: Path | None = None,
    print_only: bool = False,
    extra_env: Mapping[str, str] | None = None,
    command: str | None = None,
) -> Installed:
    """Write (or, `print_only`, only render) the client's configuration with our server."""
    client = client_format(client_name)
    if path is None:
        target = config_path(client, scope)
    else:
        if scope is not None:
            _check_scope(client, scope)
        target = path.absolute()
    entry = server_entry(
        client,
        command=command or tollway_command(),
        home=home.absolute(),
        agent_key=agent_key,
        tools=tools,
        extra_env=extra_env or {},
    )
    if print_only:  # what to add by hand: our entry under the client's key
        return Installed(None, json.dumps({client.servers_key: {name: entry}}, indent=2) + "\n", False, 0)
    doc, replaced = merged(read_config(target, client.servers_key), client.servers_key, name, entry)
    text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    write_private(target, text)
    return Installed(target, text, replaced, len(doc[client.servers_key]) - 1)


def paying_key(agent_key: str | None, token: str | None, env: Mapping[str, str]) -> str:
    """The identity the server pays as: --agent-key, --token or TOLLWAY_AGENT_KEY, checked as `tollway mcp` checks it."""
    from tollway._mcp_server.server import identity_from_key

    if token is not None and not token.strip().startswith("tw_at_"):
        raise InstallError("--token must be an access token (tw_at_…); a wallet key goes in --agent-key")
    key = (token or agent_key or env.get(AGENT_KEY_ENV) or "").strip()
    if not key:
        raise InstallError(
            f"no paying identity: pass --token tw_at_… or --agent-key (a wallet private key), or set {AGENT_KEY_ENV}"
        )
    try:
        identity_from_key(key, 1)
    except ValueError as exc:
        raise InstallError(str(exc).replace(AGENT_KEY_ENV, "the agent key")) from None
    return key


def check_tools(wanted: str, env: Mapping[str, str]) -> str:
    """The selection as the server will read it, after checking every item against the
    installed tools (a kernel collected over a throwaway home: nothing is written to the real one)."""
    from tollway._mcp_server.selection import UnknownTools, resolve, split
    from tollway._runtime.service import build_kernel
    from tollway._runtime.settings import load_settings

    with tempfile.TemporaryDirectory(prefix="tollway-tools-") as scratch:
        settings = load_settings(
            {
                **env,
                "TOLLWAY_HOME": scratch,
                "TOLLWAY_DATABASE_URL": f"sqlite:///{scratch}/x.db",
                "TOLLWAY_OFFLINE": "1",
            }
        )
        kernel = build_kernel(settings)
        kernel.collect()
        try:
            resolve(kernel, wanted)
        except UnknownTools as exc:
            raise InstallError(f"--tools: {exc}") from None
    return ",".join(split(wanted))


def run_install(args: Any) -> int:
    """`tollway mcp install` with its parsed arguments."""
    from tollway._runtime.settings import home_of, read_env

    env = read_env()
    key = paying_key(args.agent_key, args.token, env)
    extra = {name: env[name] for name in CARRIED_SETTINGS if env.get(name)}
    extra.update(parse_env_pairs(args.env))
    tools = check_tools(args.tools, env) if args.tools is not None else None
    client = client_format(args.client)
    done = install(
        args.client,
        agent_key=key,
        home=home_of(env),
        name=args.name,
        tools=tools,
        scope=args.scope,
        path=Path(args.path) if args.path else None,
        print_only=args.print_only,
        extra_env=extra,
    )
    if done.path is None:
        sys.stdout.write(done.text)
        return 0
    action = "replaced" if done.replaced else "added"
    kept = f" ({done.others} other server{'' if done.others == 1 else 's'} kept)" if done.others else ""
    print(f"tollway: {action} MCP server {args.name!r} in {client.title}'s {done.path}{kept}")
    print("tollway: the file holds the agent key: it is now readable by you only (0600)")
    if args.scope == "project":
        print("tollway: it is in this project's folder: keep it out of version control")
    print(f"tollway: {client.restart}")
    return 0
