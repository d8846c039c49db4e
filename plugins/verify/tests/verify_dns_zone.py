"""A real DNS server for this plugin's tests: dnslib's `DNSServer` on 127.0.0.1, UDP and
TCP on one random port, answering from `ZONE` with `ZoneResolver` (written here).

Every name below is made up for the tests and served only by this local server (no test
asks the internet); the `.com` names are used because email-validator refuses addresses
at special-use names such as `.test`. Besides the zone's records:

* `gone.example.com` (and any other name not in the zone) answers NXDOMAIN;
* `broken.example.com` answers SERVFAIL (a domain whose own servers are broken);
* `many-mx.example.com` has 40 MX records: too many for a 512-byte UDP answer, so the
  server sends it truncated and the client asks again over TCP;
* `silent.example.com` is never answered: the resolver raises dnslib's `DNSError`, on
  which dnslib's handler logs and sends nothing, so the client times out.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from dnslib import QTYPE, RCODE, RR, DNSError, DNSRecord
from dnslib.server import DNSHandler, DNSLogger, DNSServer

ZONE = """
example.com.                  60 IN MX   10 mx1.example.com.
example.com.                  60 IN MX   20 mx2.example.com.
mx1.example.com.              60 IN A    127.0.0.1
mx2.example.com.              60 IN A    127.0.0.1
a-only.example.net.           60 IN A    127.0.0.1
a-only.example.net.           60 IN AAAA ::1
null-mx.example.org.          60 IN MX   0 .
no-mail.example.com.          60 IN TXT  "v=spf1 -all"
mailinator.com.               60 IN MX   10 mail.mailinator.com.
mail.mailinator.com.          60 IN A    127.0.0.1
inbox.mailinator.com.         60 IN MX   10 mail.mailinator.com.
fresh-throwaway.com.          60 IN MX   10 mx.guerrillamail.com.
gmail.com.                    60 IN MX   5 gmail-smtp-in.l.google.com.
xn--bcher-kva.example.com.    60 IN MX   10 mx1.example.com.
""" + "".join(f"many-mx.example.com. 60 IN MX {n} mx{n:02d}.many-mx.example.com.\n" for n in range(1, 41))
SILENT = {"silent.example.com."}
SERVFAIL = {"broken.example.com."}


@dataclass
class ZoneResolver:
    """dnslib resolver over `ZONE`: records of the asked name and type, NOERROR with no
    answer for a name that has other types only, NXDOMAIN for a name it does not hold.
    `asked` notes every question (name, type, protocol), for tests to read."""

    records: list[RR] = field(default_factory=lambda: RR.fromZone(ZONE))
    asked: list[tuple[str, str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def resolve(self, request, handler):
        name = str(request.q.qname).lower()
        with self.lock:
            self.asked.append((name.rstrip("."), QTYPE[request.q.qtype], handler.protocol))
        if name in SILENT:
            raise DNSError("silent by design")  # dnslib's handler catches it and answers nothing
        reply = request.reply()
        if name in SERVFAIL:
            reply.header.rcode = RCODE.SERVFAIL
            return reply
        held = [rr for rr in self.records if str(rr.rname).lower() == name]
        if not held:
            reply.header.rcode = RCODE.NXDOMAIN
        for rr in held:
            if rr.rtype == request.q.qtype:
                reply.add_answer(rr)
        return reply


class TruncatingHandler(DNSHandler):
    """dnslib's handler, answering a UDP question whose answer exceeds 512 bytes (classic
    DNS without EDNS) as servers do: the question echoed, no records, the TC flag set.
    (dnslib's own `truncate()` drops the question too, which resolvers do not accept as an
    answer to theirs.)"""

    def get_reply(self, data: bytes) -> bytes:
        whole = super().get_reply(data)
        if self.protocol != "udp" or len(whole) <= 512:
            return whole
        cut = DNSRecord.parse(data).reply()
        cut.header.tc = 1
        return cut.pack()


@dataclass
class Zone:
    port: int
    resolver: ZoneResolver

    @property
    def asked(self) -> list[tuple[str, str, str]]:
        return self.resolver.asked

    def env(self, **more: str) -> dict[str, str]:
        """The plugin's settings that make it ask this server (1-second questions)."""
        return {"TOLLWAY_VERIFY_NAMESERVERS": "127.0.0.1", "TOLLWAY_VERIFY_DNS_PORT": str(self.port),
                "TOLLWAY_VERIFY_DNS_TIMEOUT_S": "1", **more}  # fmt: skip


@contextlib.contextmanager
def dns_zone() -> Iterator[Zone]:
    """Serve the zone on a free port of 127.0.0.1, over UDP and TCP."""
    resolver = ZoneResolver()
    quiet = DNSLogger(logf=lambda _line: None)
    servers: list[DNSServer] = []
    for _ in range(10):  # UDP takes a free port; TCP then needs the same number free too
        udp = DNSServer(resolver, address="127.0.0.1", port=0, logger=quiet, handler=TruncatingHandler)
        port = udp.server.server_address[1]
        try:
            tcp = DNSServer(resolver, address="127.0.0.1", port=port, tcp=True, logger=quiet)
        except OSError:
            udp.server.server_close()
            continue
        servers = [udp, tcp]
        break
    assert servers, "no port free for both UDP and TCP"
    for server in servers:
        server.start_thread()
    try:
        yield Zone(port=port, resolver=resolver)
    finally:
        for server in servers:
            server.stop()
            server.server.server_close()
