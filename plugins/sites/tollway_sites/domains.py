"""The `domains` provider kind: who registered a domain and when its registration lapses,
and the DNS records that point a domain at a site.

The first provider, `rdap`, speaks the Registration Data Access Protocol: the query
`GET <base>/domain/<name>` of RFC 9082 with `Accept: application/rdap+json`, answered by
the domain object of RFC 9083 (`ldhName`, `status[]`, `events[]` with `eventAction`
"registration" and "expiration", `entities[]` with the role "registrar" and its jCard
`vcardArray`). Which registry's server answers for a TLD is RFC 7484's bootstrap; the
default base, https://rdap.org, is a redirector that applies it and answers 302 to that
server, so redirects are followed. A 404 means the registry holds no such domain.

Every other outcome (5xx, 429, a timeout, an answer that is not an RDAP domain object)
raises `DomainsUnavailable`, a `ToolError` of code `provider_unavailable`: a tool lets it
fail the call (not charged), the expiry check catches it and tries again next round.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

import httpx
import msgspec

from tollway import Provider, Setting, ToolError

KIND = "domains"
TIMEOUT_S = 15.0
TTL_S = 3600

RDAP_URL = Setting(
    KIND,
    "rdap_url",
    "https://rdap.org",
    "Base URL of an RDAP service (RFC 9082): <URL>/domain/<name> is asked for each domain. The default, "
    "rdap.org, redirects each query to the registry that answers for the domain's TLD (RFC 7484 bootstrap).",
)


class DomainsUnavailable(ToolError):
    """The domains provider did not answer usably: an error status, a timeout, an unreadable answer.
    `details.reason` says which (`timeout`, `unreachable`, `rate_limited`, `upstream_status`, `malformed`)."""

    def __init__(self, message: str, *, reason: str, upstream_status: int | None = None) -> None:
        details: dict[str, Any] = {"reason": reason}
        if upstream_status is not None:
            details["upstream_status"] = upstream_status
        super().__init__("provider_unavailable", message, status=503, details=details)
        self.reason = reason
        self.upstream_status = upstream_status


@dataclasses.dataclass(frozen=True)
class Registration:
    """A domain's registration as its registry tells it; times are unix milliseconds."""

    domain: str  # the registry's LDH (ASCII, punycode) name, lower-case
    expires_ms: int | None
    registered_ms: int | None
    registrar: str | None
    statuses: list[str]


class DomainsClient(Protocol):
    """What every `domains` provider's client offers (`RdapClient` does)."""

    async def registration(self, domain: str) -> Registration | None:
        """The domain's registration, or None when it is not registered."""
        ...


# -- names ---------------------------------------------------------------------------------
def normalize(domain: str) -> str:
    """The domain as DNS and RDAP spell it: lower-case, without the trailing dot, each label
    in its ASCII form (an internationalized name through Python's `idna` codec, IDNA 2003:
    "Bücher.Example." -> "xn--bcher-kva.example"). ValueError when it is not a host name."""
    text = domain.strip().rstrip(".").lower()
    if not text or len(text) > 253:
        raise ValueError(f"{domain!r} is not a domain name")
    try:
        ascii_name = text.encode("idna").decode("ascii").lower()
    except UnicodeError as exc:
        raise ValueError(f"{domain!r} is not a domain name: {exc}") from None
    labels = ascii_name.split(".")
    for label in labels:
        if not label or len(label) > 63 or label.startswith("-") or label.endswith("-"):
            raise ValueError(f"{domain!r} is not a domain name")
        if not all(c.isascii() and (c.isalnum() or c == "-") for c in label):
            raise ValueError(f"{domain!r} is not a domain name")
    if len(labels) < 2:
        raise ValueError(f"{domain!r} is not a domain name (a registered domain has at least two labels)")
    return ascii_name


# Second-level labels under which country-code registries sell names (example.co.uk,
# example.com.au): a name ending in one of these under a two-letter TLD is registered one
# label further down. A heuristic in place of the Public Suffix List, right for the usual cases.
_SECOND_LEVEL = frozenset({"ac", "co", "com", "edu", "gob", "gov", "ltd", "me", "mil", "ne", "net", "nom", "or", "org"})


def registrable_domain(domain: str) -> str:
    """The name registered at a registry that `domain` (normalized) is part of:
    "www.example.com" -> "example.com", "blog.example.co.uk" -> "example.co.uk"."""
    labels = normalize(domain).split(".")
    keep = 3 if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVEL else 2
    return ".".join(labels[-keep:])


def is_apex(domain: str) -> bool:
    """Whether `domain` is a registered domain itself rather than a name under one."""
    return normalize(domain) == registrable_domain(domain)


# -- the RDAP client ------------------------------------------------------------------------
def _time_ms(value: object) -> int | None:
    """An RFC 3339 eventDate as unix milliseconds (a date without an offset is UTC); None when unreadable."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.endswith(("z", "Z")):
        text = text[:-1] + "+00:00"
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return math.floor(when.timestamp() * 1000)


def _vcard_fn(entity: Mapping[str, Any]) -> str | None:
    """The formatted name (`fn`) of an entity's jCard (RFC 7095): ["vcard", [[name, params, type, value], ...]]."""
    card = entity.get("vcardArray")
    if not isinstance(card, list) or len(card) < 2 or not isinstance(card[1], list):
        return None
    for prop in card[1]:
        if isinstance(prop, list) and len(prop) >= 4 and prop[0] == "fn" and isinstance(prop[3], str):
            return prop[3].strip() or None
    return None


def _registrar(entities: object) -> str | None:
    if not isinstance(entities, list):
        return None
    for entity in entities:
        if isinstance(entity, dict) and "registrar" in (entity.get("roles") or []):
            return _vcard_fn(entity) or (entity.get("handle") if isinstance(entity.get("handle"), str) else None)
    return None


def parse_domain(body: object, asked: str) -> Registration:
    """A Registration from an RFC 9083 domain object; DomainsUnavailable when it is not one."""
    if not isinstance(body, dict) or body.get("objectClassName", "domain") != "domain":
        raise DomainsUnavailable("The RDAP service answered something other than a domain object.", reason="malformed")
    ldh = body.get("ldhName")
    name = ldh.strip().rstrip(".").lower() if isinstance(ldh, str) and ldh.strip() else asked
    expires = registered = None
    events = body.get("events")
    for event in events if isinstance(events, list) else []:
        if not isinstance(event, dict):
            continue
        action = event.get("eventAction")
        if action == "expiration" and expires is None:
            expires = _time_ms(event.get("eventDate"))
        elif action == "registration" and registered is None:
            registered = _time_ms(event.get("eventDate"))
    status = body.get("status")
    statuses = [s for s in status if isinstance(s, str)] if isinstance(status, list) else []
    return Registration(name, expires, registered, _registrar(body.get("entities")), statuses)


class RdapClient:
    """`GET <base>/domain/<name>` (Accept: application/rdap+json, redirects followed) -> Registration."""

    def __init__(self, base_url: str, http: httpx.AsyncClient) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = http

    def __repr__(self) -> str:
        return f"RdapClient({self.base_url!r})"

    async def registration(self, domain: str) -> Registration | None:
        name = normalize(domain)
        url = f"{self.base_url}/domain/{quote(name, safe='')}"
        try:
            response = await self.http.get(
                url, headers={"Accept": "application/rdap+json"}, follow_redirects=True, timeout=TIMEOUT_S
            )
        except httpx.TimeoutException:
            raise DomainsUnavailable("The RDAP service did not answer in time.", reason="timeout") from None
        except httpx.HTTPError as exc:
            raise DomainsUnavailable(
                f"The RDAP service could not be reached ({type(exc).__name__}).", reason="unreachable"
            ) from None
        if response.status_code == 404:
            return None
        if response.status_code == 429:
            raise DomainsUnavailable(
                "The RDAP service is limiting requests.", reason="rate_limited", upstream_status=429
            )
        if not 200 <= response.status_code < 300:
            raise DomainsUnavailable(
                f"The RDAP service answered HTTP {response.status_code}.",
                reason="upstream_status",
                upstream_status=response.status_code,
            )
        try:
            body = msgspec.json.decode(response.content)
        except msgspec.DecodeError:
            raise DomainsUnavailable(
                "The RDAP service answered something other than JSON.", reason="malformed"
            ) from None
        return parse_domain(body, name)


def _rdap(settings: Mapping[str, str], http: httpx.AsyncClient) -> RdapClient:
    raw = settings.get(RDAP_URL.name)
    return RdapClient((raw or "").strip() or RDAP_URL.default or "", http)


RDAP = Provider(
    kind=KIND,
    name="rdap",
    build=_rdap,
    settings=(RDAP_URL,),
    cost_estimate=0,
    description="RDAP (RFC 9082/9083): registration and expiry of a domain, through rdap.org's bootstrap redirects by default.",
)

PROVIDERS: tuple[Provider, ...] = (RDAP,)


# -- DNS records ---------------------------------------------------------------------------
# GitHub Pages' addresses for an apex domain, as GitHub's documentation lists them
# ("Managing a custom domain for your GitHub Pages site", DNS records for your custom domain).
PAGES_A = ("185.199.108.153", "185.199.109.153", "185.199.110.153", "185.199.111.153")
PAGES_AAAA = ("2606:50c0:8000::153", "2606:50c0:8001::153", "2606:50c0:8002::153", "2606:50c0:8003::153")


def _record(type_: str, name: str, value: str, note: str | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"type": type_, "name": name, "value": value, "ttl": TTL_S}
    if note:
        record["note"] = note
    return record


def _host(target_host: str) -> str:
    """The host name of `target_host` (a bare host, or a URL such as the public URL setting)."""
    text = target_host.strip()
    host = urlsplit(text if "://" in text else f"//{text}").hostname or ""
    if not host:
        raise ValueError(f"{target_host!r} names no host")
    return host.rstrip(".").lower()


def dns_records(domain: str, *, target_host: str, github_pages_owner: str | None) -> list[dict[str, Any]]:
    """The DNS records to set at the domain's DNS host so `domain` reaches the site: each
    `{type, name, value, ttl: 3600, note?}`, `name` the full host name the record is for.

    With `github_pages_owner` (the site is published on GitHub Pages): an apex domain gets
    GitHub Pages' four A and four AAAA records and `www.<domain>` a CNAME to
    `<owner>.github.io`; a subdomain one CNAME to `<owner>.github.io`. Without it (the site
    is served by this service at `target_host`): a subdomain gets a CNAME to the host, an
    apex an ALIAS (ANAME) record to it, since an apex cannot hold a CNAME; a host that is
    an IP address gets A or AAAA records instead. ValueError when `domain` is not a domain name.
    """
    name = normalize(domain)
    apex = is_apex(name)
    if github_pages_owner is not None:
        owner = github_pages_owner.strip().lower()
        if not owner:
            raise ValueError("github_pages_owner is empty")
        pages = f"{owner}.github.io"
        if not apex:
            return [_record("CNAME", name, pages, "Points the subdomain at the GitHub Pages site of " + owner + ".")]
        return [
            *(_record("A", name, ip, "GitHub Pages' IPv4 addresses: set all four.") for ip in PAGES_A),
            *(_record("AAAA", name, ip, "GitHub Pages' IPv6 addresses: set all four.") for ip in PAGES_AAAA),
            _record("CNAME", f"www.{name}", pages, f"www.{name} then reaches the site too (GitHub redirects it)."),
        ]
    host = _host(target_host)
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        address = None
    if address is not None:
        type_ = "A" if address.version == 4 else "AAAA"
        return [_record(type_, name, str(address), "This service's address: a CNAME cannot point at an address.")]
    if not apex:
        return [_record("CNAME", name, host, f"Points the subdomain at this service ({host}).")]
    return [
        _record(
            "ALIAS",
            name,
            host,
            "An apex domain cannot hold a CNAME record (it would clash with the zone's SOA and NS records). "
            "Use your DNS host's ALIAS or ANAME record, or its CNAME flattening, to point the apex at "
            f"{host}; a DNS host without any of these needs the A/AAAA records of {host}'s addresses instead.",
        )
    ]


__all__ = [
    "KIND",
    "PROVIDERS",
    "RDAP",
    "RDAP_URL",
    "DomainsClient",
    "DomainsUnavailable",
    "RdapClient",
    "Registration",
    "dns_records",
    "is_apex",
    "normalize",
    "registrable_domain",
]
