"""Several API processes on one port (`tollway serve --processes N`), each with its own socket.

uvicorn's own multi-process mode shares one listening socket: whichever process wakes
first takes the next connection, so a burst of new keep-alive connections can all land
on one process while the other idles. Here every process binds its own socket to the
port with SO_REUSEPORT and the kernel spreads new connections over them by a hash of
their addresses (Linux). Where SO_REUSEPORT is missing, uvicorn's shared socket is used.
"""

from __future__ import annotations

import multiprocessing
import signal
import socket
import sys
from typing import Any

from tollway._runtime.proxies import uvicorn_proxy_options


def _reuseport_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _serve_one(
    target: str, host: str, port: int, log_level: str, paths: list[str], trusted_proxies: tuple[str, ...]
) -> None:
    import uvicorn

    sys.path[:0] = [p for p in paths if p not in sys.path]
    config = uvicorn.Config(
        target,
        factory=True,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        **uvicorn_proxy_options(trusted_proxies),
    )
    server = uvicorn.Server(config)
    server.run(sockets=[_reuseport_socket(host, port)])


def serve_processes(
    target: str,
    *,
    host: str,
    port: int,
    processes: int,
    log_level: str = "info",
    paths: list[str] | None = None,
    trusted_proxies: tuple[str, ...] = (),
) -> None:
    """Run `processes` uvicorn servers of the app factory `target` ("module:function") on
    `host:port` until SIGINT or SIGTERM, then stop them all (each finishes its requests).
    Proxy headers are honoured from `trusted_proxies` only (runtime/proxies.py)."""
    if not hasattr(socket, "SO_REUSEPORT"):
        import uvicorn

        uvicorn.run(
            target,
            factory=True,
            host=host,
            port=port,
            workers=processes,
            log_level=log_level,
            access_log=False,
            **uvicorn_proxy_options(trusted_proxies),
        )
        return
    _reuseport_socket(host, port).close()  # the port is free: fail here, not in N children
    spawn = multiprocessing.get_context("spawn")
    children: list[Any] = [
        spawn.Process(
            target=_serve_one, args=(target, host, port, log_level, paths or [], trusted_proxies), daemon=False
        )
        for _ in range(processes)
    ]
    for child in children:
        child.start()

    def stop(signum: int, frame: Any) -> None:
        for child in children:
            if child.is_alive():
                child.terminate()  # SIGTERM: uvicorn shuts down gracefully

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for child in children:
            child.join()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
