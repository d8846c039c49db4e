"""A real `tollway serve` for the client libraries' tests, on the embedded default (SQLite, the
local test network) on 127.0.0.1, with what those tests need beside it:

* an NHTSA stand-in (the recalls lookup's upstream, `TOLLWAY_VEHICLES_NHTSA_API_URL`), so a
  paid lookup answers with no internet;
* a proxy in front of the service that passes HTTP through and cuts every WebSocket: the first
  one right after the server's first frame (the job's snapshot), every later one at once, so a
  client waiting through it must finish by polling.

`python clients/testing/serve.py` prints one JSON line once all of it answers —
`{"url", "cutting_url", "operator_token"}` — and stops everything when its stdin closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
import tempfile
from pathlib import Path

import httpx

OPERATOR_TOKEN = "client-tests-operator"
RECALLS = {
    "Count": 1,
    "Message": "Results returned successfully",
    "results": [
        {
            "Manufacturer": "Honda (American Honda Motor Co.)",
            "NHTSACampaignNumber": "21V900000",
            "parkIt": False,
            "parkOutSide": False,
            "overTheAirUpdate": False,
            "ReportReceivedDate": "18/11/2021",
            "Component": "SEAT BELTS:REAR/OTHER:RETRACTOR",
            "Summary": "The automatic locking retractor on the second-row center seat belt may deactivate.",
            "Consequence": "An unsecured child restraint system can increase the risk of injury during a crash.",
            "Remedy": "Dealers will replace the second-row center seat belt assembly, free of charge.",
            "Notes": "Owners may also contact NHTSA.",
            "ModelYear": "2021",
            "Make": "HONDA",
            "Model": "ACCORD",
        }
    ],
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def nhtsa_stand_in(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Any GET answers the recalls above (one request per connection)."""
    with contextlib.suppress(Exception):
        await reader.readuntil(b"\r\n\r\n")
        body = json.dumps(RECALLS).encode()
        head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n"
        writer.write(head.encode() + body)
        await writer.drain()
    writer.close()


class CuttingProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.sockets_seen = 0

    async def pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, cut: asyncio.Event | None) -> None:
        """Copy until EOF; with `cut`, stop after the first bytes past the end of the 101's headers."""
        seen = b""
        with contextlib.suppress(Exception):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
                if cut is not None:
                    seen += data
                    head, sep, rest = seen.partition(b"\r\n\r\n")
                    if sep and rest:
                        cut.set()
                        return
        if cut is not None:
            cut.set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            first = await reader.readuntil(b"\r\n\r\n")
        except Exception:
            writer.close()
            return
        websocket = b"upgrade: websocket" in first.lower()
        if websocket:
            self.sockets_seen += 1
            if self.sockets_seen > 1:  # the push channel stays down: polling must finish
                writer.close()
                return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        up_writer.write(first)
        cut = asyncio.Event() if websocket else None
        upward = asyncio.ensure_future(self.pipe(reader, up_writer, None))
        downward = asyncio.ensure_future(self.pipe(up_reader, writer, cut))
        if cut is not None:
            await cut.wait()
        else:
            await asyncio.wait({upward, downward}, return_when=asyncio.FIRST_COMPLETED)
        for task in (upward, downward):
            task.cancel()
        for w in (writer, up_writer):
            w.close()


async def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="tollway-clients-"))
    stand_in = await asyncio.start_server(nhtsa_stand_in, "127.0.0.1", 0)
    nhtsa_url = f"http://127.0.0.1:{stand_in.sockets[0].getsockname()[1]}"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOLLWAY_")}
    env.update(
        TOLLWAY_HOME=str(home),
        TOLLWAY_OFFLINE="1",
        TOLLWAY_OPERATOR_TOKEN=OPERATOR_TOKEN,
        TOLLWAY_VEHICLES_NHTSA_API_URL=nhtsa_url,
    )
    tollway = str(Path(sys.executable).parent / "tollway")
    log = open(home / "serve.log", "wb")  # noqa: SIM115 - open while the service runs
    serve = await asyncio.create_subprocess_exec(
        tollway, "serve", "--host", "127.0.0.1", "--port", str(port), env=env, stdout=log, stderr=log
    )
    url = f"http://127.0.0.1:{port}"
    proxy = await asyncio.start_server(CuttingProxy(port).handle, "127.0.0.1", 0)
    try:
        async with httpx.AsyncClient() as http:
            for _ in range(1200):
                if serve.returncode is not None:
                    raise SystemExit(f"tollway serve exited: {(home / 'serve.log').read_text()[-2000:]}")
                with contextlib.suppress(httpx.TransportError):
                    if (await http.get(f"{url}/healthz", timeout=2)).status_code == 200:
                        break
                await asyncio.sleep(0.1)
        cutting_url = f"http://127.0.0.1:{proxy.sockets[0].getsockname()[1]}"
        print(json.dumps({"url": url, "cutting_url": cutting_url, "operator_token": OPERATOR_TOKEN}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the test closes stdin
    finally:
        serve.terminate()
        try:
            await asyncio.wait_for(serve.wait(), 20)
        except TimeoutError:
            serve.kill()
        proxy.close()
        stand_in.close()
        log.close()


if __name__ == "__main__":
    asyncio.run(main())
