"""Where a domain's mail goes, from DNS (dnspython's asyncio resolver).

RFC 5321 section 5.1: a domain's MX records name its mail hosts, the lowest preference
first; a domain without MX records but with an address (A or AAAA) is its own mail host
(the "implicit MX"); RFC 7505: a single MX of preference 0 whose host is the root `.`
(the "null MX") says the domain accepts no mail at all. NXDOMAIN: no such domain.

A question the resolvers could not answer (a timeout, nothing listening, SERVFAIL or a
refusal) tells nothing about the address, so it is not a finding: it raises a ToolError
(503 `provider_unavailable`, `details.reason` `dns_timeout` or `dns_error`) and the call
is not charged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import dns.asyncresolver
import dns.exception
import dns.name
import dns.resolver

from tollway import ToolError

from .settings import Config


@dataclass(frozen=True)
class MailRoute:
    """What DNS says of a domain's mail."""

    exists: bool  # the name exists (anything but NXDOMAIN)
    mx: tuple[tuple[str, int], ...] = ()  # (host, preference), lowest preference first; the null MX is not listed
    implicit_mx: bool = False  # no MX records, but an A or AAAA record: the domain is its own mail host
    null_mx: bool = False  # RFC 7505: the domain says it accepts no mail
    addresses: tuple[str, ...] = field(default=())  # the implicit MX's addresses (A then AAAA)

    @property
    def accepts_mail(self) -> bool:
        return self.exists and not self.null_mx and (bool(self.mx) or self.implicit_mx)

    def mail_hosts(self, domain: str) -> list[str]:
        """The hosts to deliver to, in order (the domain itself for an implicit MX)."""
        if self.null_mx or not self.exists:
            return []
        return [host for host, _ in self.mx] if self.mx else [domain] if self.implicit_mx else []


def resolver_for(cfg: Config) -> dns.asyncresolver.Resolver:
    """A resolver asking the configured servers (or the system's) on the configured port,
    each question bounded by the configured timeout, without a cache or search list."""
    try:
        resolver = dns.asyncresolver.Resolver(configure=not cfg.nameservers)
    except dns.resolver.NoResolverConfiguration as exc:
        raise ToolError(
            "provider_unavailable", "This service has no DNS resolver configured (set TOLLWAY_VERIFY_NAMESERVERS).",
            status=503, details={"reason": "misconfigured", "settings": ["TOLLWAY_VERIFY_NAMESERVERS"]},
        ) from exc  # fmt: skip
    resolver.port = cfg.dns_port  # before the servers: plain addresses are asked on this port
    if cfg.nameservers:
        resolver.nameservers = list(cfg.nameservers)
    resolver.lifetime = cfg.dns_timeout_s
    resolver.timeout = min(2.0, cfg.dns_timeout_s)  # one try; the lifetime allows retries
    resolver.search = []
    resolver.use_search_by_default = False
    return resolver


def dns_failure(exc: dns.exception.DNSException, domain: str) -> ToolError:
    """The uncharged failure of a question the resolvers did not answer."""
    errors = (getattr(exc, "kwargs", None) or {}).get("errors") or []
    # Each error is (server, tcp, port, exception or rcode, response): a response means a
    # server did answer, with SERVFAIL or REFUSED; none means nothing answered at all.
    answered = any(len(e) > 4 and e[4] is not None for e in errors)
    if isinstance(exc, (dns.exception.Timeout, dns.resolver.NoNameservers)) and not answered:
        return ToolError(
            "provider_unavailable",
            f"The DNS resolver could not be reached or did not answer in time about {domain}; nothing was charged, try again later.",
            status=503, details={"reason": "dns_timeout", "domain": domain},
        )  # fmt: skip
    return ToolError(
        "provider_unavailable",
        f"The DNS resolver could not look up {domain} (it answered with an error); nothing was charged, try again later.",
        status=503, details={"reason": "dns_error", "domain": domain},
    )  # fmt: skip


async def _ask(resolver: dns.asyncresolver.Resolver, name: str, rdtype: str) -> dns.resolver.Answer | None:
    """The answer, or None when the name exists but has no record of the type.
    NXDOMAIN propagates; every other failure is a ToolError."""
    try:
        return await resolver.resolve(dns.name.from_text(name), rdtype, search=False)
    except dns.resolver.NoAnswer:
        return None
    except dns.resolver.NXDOMAIN:
        raise
    except dns.exception.DNSException as exc:
        raise dns_failure(exc, name) from None


async def addresses(resolver: dns.asyncresolver.Resolver, host: str) -> list[str]:
    """A host's addresses, A records first then AAAA; [] when it has none or does not exist."""
    found: list[str] = []
    for rdtype in ("A", "AAAA"):
        try:
            answer = await _ask(resolver, host, rdtype)
        except dns.resolver.NXDOMAIN:
            return found
        if answer is not None:
            found += [r.address for r in answer]
    return found


async def mail_route(resolver: dns.asyncresolver.Resolver, domain: str) -> MailRoute:
    """Where mail to `domain` (its ASCII form) goes: MX records, else the implicit MX."""
    try:
        answer = await _ask(resolver, domain, "MX")
    except dns.resolver.NXDOMAIN:
        return MailRoute(exists=False)
    if answer is not None:
        null = [r for r in answer if r.exchange == dns.name.root]
        hosts = {
            (r.exchange.to_text(omit_final_dot=True).lower(), int(r.preference))
            for r in answer
            if r.exchange != dns.name.root
        }
        if null and not hosts:  # RFC 7505; a null MX published beside real ones is ignored, as MTAs do
            return MailRoute(exists=True, null_mx=True)
        if hosts:
            return MailRoute(exists=True, mx=tuple(sorted(hosts, key=lambda hp: (hp[1], hp[0]))))
    found = await addresses(resolver, domain)
    return MailRoute(exists=True, implicit_mx=bool(found), addresses=tuple(found))
