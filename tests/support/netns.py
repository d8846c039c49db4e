"""Hosts for the multi-host test: network namespaces on a bridge of their own, their links, and the PostgreSQL forwarder."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import subprocess
from pathlib import Path

PG_SOCKET = "/var/run/postgresql/.s.PGSQL.5432"
SOCAT = shutil.which("socat") or "/usr/bin/socat"
# tw<pid of the run that made it><one letter>: the switch is "s", the hosts are the other letters
_OURS = re.compile(r"^tw(\d+)([a-z])$")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10, check=check)


def unavailable() -> str | None:
    """Why namespaces cannot be made here (None when they can): not root, no `ip`, or `ip netns add` refused."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is not installed"
    probe = f"tw{os.getpid()}z"
    try:
        made = _ip("netns", "add", probe, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"ip netns add failed: {exc}"
    if made.returncode != 0:
        return f"ip netns add is not permitted: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def remove_stale() -> list[str]:
    """Delete the namespaces a killed earlier run left (ours by name, their run's process gone)."""
    removed = []
    for line in _ip("netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        match = _OURS.match(name)
        if match and not Path(f"/proc/{match.group(1)}").exists():
            for pid in _ip("netns", "pids", name, check=False).stdout.split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), 9)
            _ip("netns", "del", name, check=False)
            removed.append(name)
    return removed


@dataclasses.dataclass(frozen=True)
class Host:
    name: str  # the namespace
    address: str  # its address on the lab's network
    link: str  # its end of the veth pair

    def command(self, *argv: str) -> list[str]:
        """`argv` run inside this host's namespace."""
        return ["ip", "netns", "exec", self.name, *argv]


class Lab:
    """Hosts joined by veth pairs to a bridge inside a switch namespace of their own: the root
    namespace gets no interface, route or bridge. `close` deletes every namespace made."""

    def __init__(self, subnet: str = "10.231.7") -> None:
        self.prefix = f"tw{os.getpid()}"
        self.subnet = subnet
        self.switch = f"{self.prefix}s"
        self.hosts: dict[str, Host] = {}
        self._made: list[str] = []
        try:
            self._add_namespace(self.switch)
            _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.switch, "link", "set", "br0", "up")
        except Exception:
            self.close()
            raise

    def _add_namespace(self, name: str) -> None:
        _ip("netns", "add", name)
        self._made.append(name)
        _ip("-n", name, "link", "set", "lo", "up")

    def add_host(self, letter: str, octet: int) -> Host:
        assert letter != "s" and len(letter) == 1
        name = f"{self.prefix}{letter}"
        self._add_namespace(name)
        link, peer = f"{name}0", f"{name}p"
        # made in place: one end in the host, the other in the switch, none in the root namespace
        _ip("link", "add", link, "netns", name, "type", "veth", "peer", "name", peer, "netns", self.switch)
        _ip("-n", name, "addr", "add", f"{self.subnet}.{octet}/24", "dev", link)
        _ip("-n", name, "link", "set", link, "up")
        _ip("-n", self.switch, "link", "set", peer, "master", "br0", "up")
        host = Host(name, f"{self.subnet}.{octet}", link)
        self.hosts[letter] = host
        return host

    def cut(self, host: Host) -> None:
        """Take the host's link down: its packets go nowhere, nobody is told."""
        _ip("-n", host.name, "link", "set", host.link, "down")

    def close(self) -> None:
        """Kill what still runs inside the namespaces made, then delete them."""
        for name in reversed(self._made):
            for pid in _ip("netns", "pids", name, check=False).stdout.split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), 9)
            _ip("netns", "del", name, check=False)
        self._made.clear()


def forward_postgres(
    host: Host, limits: dict[str, str], port: int = 5432, socket_path: str = PG_SOCKET
) -> subprocess.Popen[bytes]:
    """socat in `host` accepting PostgreSQL connections on its address and passing each to the
    machine's server over its Unix socket (a path, which namespaces do not separate).

    The hosts' TCP peer is socat, not the server, so socat's sockets keep the TCP limits each
    session asks the server for (`limits`: runtime/database/database.py's `session_limits`):
    a silent peer closes its connection, and the server then ends the session, as a server
    reached over TCP would itself."""
    tcp = ["reuseaddr", "fork"]
    if "tcp_keepalives_idle" in limits:
        tcp += [
            "keepalive",
            f"keepidle={limits['tcp_keepalives_idle']}",
            f"keepintvl={limits['tcp_keepalives_interval']}",
            f"keepcnt={limits['tcp_keepalives_count']}",
            f"setsockopt-int=6:18:{limits['tcp_user_timeout']}",  # IPPROTO_TCP, TCP_USER_TIMEOUT (ms)
        ]
    return subprocess.Popen(
        host.command(SOCAT, f"TCP-LISTEN:{port},bind={host.address},{','.join(tcp)}", f"UNIX-CONNECT:{socket_path}"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
