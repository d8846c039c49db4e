"""The SMTP RCPT probe: ask the domain's mail server whether it would take mail for the
address, without sending any (aiosmtplib's low-level client).

One conversation, as a sending server would start it: connect to the best mail host
(lowest MX preference; the next ones only when a host cannot be reached or refuses to
talk), `EHLO` (`HELO` when EHLO is refused), `MAIL FROM:<probe_from>` (the null sender
`<>` by default), `RCPT TO:<address>`, and when that is accepted a second
`RCPT TO:<random local part@domain>` in the same transaction to tell a catch-all server
(one that accepts every address) from a real mailbox; then `QUIT`. No `DATA` is ever sent.

A host answers RCPT once: its reply is the finding, even a temporary one (4xx). Backup
mail hosts often accept everything and sort it out later, so asking them after the
primary answered would only blur the answer.

The probe only connects to public addresses unless the operator allows private ones
(`TOLLWAY_VERIFY_SMTP_ALLOW_PRIVATE`): a caller chooses the domain, hence where its MX
points. The mail hosts' addresses come from the same resolver as the MX records.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import ipaddress
import secrets
import socket

import aiosmtplib
import dns.asyncresolver

from tollway import ToolError

from .dns_check import MailRoute, addresses
from .settings import Config

MAX_HOSTS = 3  # mail hosts tried, best preference first
MAX_ADDRESSES = 2  # addresses tried per host
COMMAND_TIMEOUT_S = 10.0  # connecting, and each command's reply
PROBE_BUDGET_S = 30.0  # the whole probe, every host included
MESSAGE_CHARS = 200  # a server's reply text kept in the answer

ACCEPTED = (250, 251)
REJECTED = (550, 551, 553)  # mailbox unavailable, user not local, mailbox name not allowed


@dataclasses.dataclass(frozen=True)
class ProbeResult:
    """What the probe found (`checked`: a RCPT reply for the address was read)."""

    checked: bool
    skipped: str | None = None  # why no RCPT reply was read (see docs/verify.md)
    host: str | None = None  # the mail host that answered
    code: int | None = None  # its RCPT reply code for the address
    message: str | None = None  # its reply text, or why the probe stopped
    catch_all: bool | None = None  # it also accepted a random address at the domain (None: not known)

    @property
    def accepted(self) -> bool:
        return self.checked and self.code in ACCEPTED

    @property
    def rejected(self) -> bool:
        return self.checked and self.code in REJECTED


def is_public(address: str) -> bool:
    """A globally routable unicast address; an IPv6 address carrying an IPv4 one is
    judged by the IPv4 address too."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if ip.is_multicast or not ip.is_global:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        inner = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if inner is not None:
            return is_public(str(inner))
    return True


@functools.lru_cache(maxsize=1)
def _fqdn() -> str:
    """This host's FQDN, looked up once per process."""
    return socket.getfqdn()


async def ehlo_name(cfg: Config) -> str:
    """The name the probe greets with: the probe sender's domain, else this host's FQDN."""
    if cfg.probe_from:
        return cfg.probe_from.rpartition("@")[2]
    return await asyncio.to_thread(_fqdn)


def _text(message: str | None) -> str | None:
    if message is None:
        return None
    flat = " ".join(message.split())
    return flat[:MESSAGE_CHARS] or None


class _Refused(Exception):
    """The server talked but refused the conversation before RCPT (greeting, EHLO/HELO, MAIL)."""

    def __init__(self, step: str, code: int, message: str) -> None:
        super().__init__(f"{step} refused: {code} {_text(message) or ''}".strip())
        self.step, self.code = step, code


async def _converse(
    address: str, port: int, recipient: str, domain: str, utf8: bool, cfg: Config, helo: str
) -> ProbeResult:
    client = aiosmtplib.SMTP(
        hostname=address, port=port, local_hostname=helo, timeout=COMMAND_TIMEOUT_S, use_tls=False, start_tls=False
    )
    try:
        await client.connect()
    except aiosmtplib.SMTPConnectResponseError as exc:
        client.close()
        raise _Refused("greeting", exc.code, exc.message) from None
    try:
        try:
            await client.ehlo()
        except aiosmtplib.SMTPHeloError:
            try:
                await client.helo()
            except aiosmtplib.SMTPHeloError as exc:
                raise _Refused("HELO", exc.code, exc.message) from None
        if utf8 and not client.supports_extension("smtputf8"):
            return ProbeResult(checked=False, skipped="smtputf8_unsupported",
                               message="The mail server does not take internationalised addresses (no SMTPUTF8).")  # fmt: skip
        encoding = "utf-8" if utf8 else "ascii"
        try:
            await client.mail(cfg.probe_from, options=["SMTPUTF8"] if utf8 else None, encoding=encoding)
        except aiosmtplib.SMTPSenderRefused as exc:
            raise _Refused("MAIL FROM", exc.code, exc.message) from None
        code, message = await _rcpt(client, recipient, encoding)
        catch_all: bool | None = None
        if code in ACCEPTED:
            try:
                other, _ = await _rcpt(client, f"{secrets.token_hex(10)}@{domain}", "ascii")
            except (aiosmtplib.SMTPException, OSError):  # the address's answer stands; the test did not finish
                other = 0
            catch_all = True if other in ACCEPTED else False if other // 100 == 5 else None
        return ProbeResult(checked=True, code=code, message=_text(message), catch_all=catch_all)
    finally:
        task = asyncio.current_task()
        if task is not None and task.cancelling():  # out of time: no polite QUIT, which could wait again
            client.close()
        else:
            try:
                await client.quit()
            except (aiosmtplib.SMTPException, OSError):
                client.close()


async def _rcpt(client: aiosmtplib.SMTP, recipient: str, encoding: str) -> tuple[int, str]:
    try:
        reply = await client.rcpt(recipient, encoding=encoding)
    except aiosmtplib.SMTPRecipientRefused as exc:
        return exc.code, exc.message
    return reply.code, reply.message


async def probe(
    resolver: dns.asyncresolver.Resolver, cfg: Config, route: MailRoute, domain: str, recipient: str, *, utf8: bool
) -> ProbeResult:
    """Probe `recipient` at `domain` (its ASCII form) through the route DNS gave."""
    try:
        async with asyncio.timeout(PROBE_BUDGET_S):
            return await _probe(resolver, cfg, route, domain, recipient, utf8=utf8)
    except TimeoutError:
        return ProbeResult(checked=False, skipped="unreachable", message="The mail servers did not answer in time.")


async def _probe(
    resolver: dns.asyncresolver.Resolver, cfg: Config, route: MailRoute, domain: str, recipient: str, *, utf8: bool
) -> ProbeResult:
    helo = await ehlo_name(cfg)
    private: list[str] = []
    refused: _Refused | None = None
    failures: list[str] = []
    for host in route.mail_hosts(domain)[:MAX_HOSTS]:
        try:
            found = list(route.addresses) if route.implicit_mx else await addresses(resolver, host)
        except ToolError:
            failures.append(f"{host}: no DNS answer")
            continue
        if not found:
            failures.append(f"{host}: no address")
            continue
        if not cfg.smtp_allow_private and not all(is_public(a) for a in found):
            private.append(host)  # every address must be public, or one private one could be reached
            continue
        for address in found[:MAX_ADDRESSES]:
            try:
                result = await _converse(address, cfg.smtp_port, recipient, domain, utf8, cfg, helo)
            except _Refused as exc:
                refused = exc
                break  # this host will not talk to us; the next one may
            except (aiosmtplib.SMTPException, OSError) as exc:
                failures.append(f"{host}: {type(exc).__name__}")
                continue
            return dataclasses.replace(result, host=host)
    if refused is not None:
        return ProbeResult(
            checked=False, skipped="probe_refused", message=f"The mail server refused the probe ({refused})."
        )
    if private and not failures:
        return ProbeResult(checked=False, skipped="private_address",
                           message="The mail hosts resolve to non-public addresses, which this service does not probe.")  # fmt: skip
    return ProbeResult(
        checked=False,
        skipped="unreachable",
        message="No mail host could be reached" + (f" ({'; '.join(failures)[:150]})." if failures else "."),
    )
