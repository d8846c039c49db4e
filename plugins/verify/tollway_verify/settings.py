"""The plugin's settings (`TOLLWAY_VERIFY_*`) and how a run reads them.

Every value is read through the tool's context (the kernel reads the environment once);
a value that cannot be read (a port that is not a number) is the operator's mistake, so
the call fails with 503 `provider_unavailable` naming the variable, and is not charged.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from tollway import Setting, ToolError

FAMILY = "verify"

NAMESERVERS = Setting(
    FAMILY, "nameservers", None,
    "Comma-separated IP addresses of the DNS resolvers to ask (e.g. 1.1.1.1,9.9.9.9). "
    "Unset: the system's resolvers (/etc/resolv.conf).",
)  # fmt: skip
DNS_PORT = Setting(
    FAMILY, "dns_port", "53", "The port the resolvers are asked on (53; tests run a local zone on another)."
)
DNS_TIMEOUT_S = Setting(
    FAMILY, "dns_timeout_s", "5",
    "Seconds one DNS question may take, retries included; past it the call fails uncharged (dns_timeout).",
)  # fmt: skip
SMTP_PROBE = Setting(
    FAMILY, "smtp_probe", "false",
    "Allow the SMTP RCPT probe (true/false). Off: a call asking check_smtp is answered from DNS alone "
    "and says the probe was skipped. Turn it on only from a host whose outbound port 25 is open and whose "
    "address has a reverse DNS name, or mail servers will refuse or greylist the probes.",
)  # fmt: skip
SMTP_PORT = Setting(FAMILY, "smtp_port", "25", "The port mail servers are probed on (25; tests use a local server).")
PROBE_FROM = Setting(
    FAMILY, "probe_from", None,
    "The MAIL FROM address of probes, e.g. verify@your-domain.example (its domain is also the EHLO name). "
    "Unset: the null sender <>, as mail servers' own sender callouts use.",
)  # fmt: skip
SMTP_ALLOW_PRIVATE = Setting(
    FAMILY, "smtp_allow_private", "false",
    "Let the probe connect to mail hosts that resolve to loopback, private, link-local or other "
    "non-public addresses (true/false). Leave false on a public service: a caller controls which "
    "domain is probed, hence where its MX points. Tests and private deployments set it true.",
)  # fmt: skip

SETTINGS = (NAMESERVERS, DNS_PORT, DNS_TIMEOUT_S, SMTP_PROBE, SMTP_PORT, PROBE_FROM, SMTP_ALLOW_PRIVATE)

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Config:
    """What one run needs of the settings, read and checked."""

    nameservers: tuple[str, ...]  # empty: the system's resolvers
    dns_port: int
    dns_timeout_s: float
    smtp_probe: bool
    smtp_port: int
    probe_from: str  # "" is the null sender
    smtp_allow_private: bool


def misconfigured(setting: Setting, why: str) -> ToolError:
    return ToolError(
        "provider_unavailable", f"Email verification is misconfigured on this service: {setting.env_var} {why}.",
        status=503, details={"reason": "misconfigured", "settings": [setting.env_var]},
    )  # fmt: skip


def _value(settings: Mapping[str, str], setting: Setting) -> str:
    raw = settings.get(setting.name)
    value = raw.strip() if raw is not None else ""
    return value or (setting.default or "")


def _port(settings: Mapping[str, str], setting: Setting) -> int:
    text = _value(settings, setting)
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise misconfigured(setting, f"must be a port number, not {text!r}")
    return int(text)


def _flag(settings: Mapping[str, str], setting: Setting) -> bool:
    text = _value(settings, setting).lower()
    if text not in _TRUE | _FALSE:
        raise misconfigured(setting, f"must be true or false, not {text!r}")
    return text in _TRUE


def config(settings: Mapping[str, str]) -> Config:
    """The run's configuration from the family's settings (values by setting name)."""
    servers = tuple(s.strip() for s in _value(settings, NAMESERVERS).split(",") if s.strip())
    for server in servers:
        try:
            ipaddress.ip_address(server)
        except ValueError:
            raise misconfigured(NAMESERVERS, f"must list IP addresses, and {server!r} is not one") from None
    timeout_text = _value(settings, DNS_TIMEOUT_S)
    try:
        timeout = float(timeout_text)
    except ValueError:
        timeout = 0.0
    if not 0 < timeout <= 60:
        raise misconfigured(DNS_TIMEOUT_S, f"must be a number of seconds above 0 and at most 60, not {timeout_text!r}")
    probe_from = _value(settings, PROBE_FROM)
    if probe_from and (probe_from.count("@") != 1 or any(c.isspace() or c in "<>" for c in probe_from)):
        raise misconfigured(PROBE_FROM, "must be one plain address such as verify@example.com")
    return Config(
        nameservers=servers, dns_port=_port(settings, DNS_PORT), dns_timeout_s=timeout,
        smtp_probe=_flag(settings, SMTP_PROBE), smtp_port=_port(settings, SMTP_PORT), probe_from=probe_from,
        smtp_allow_private=_flag(settings, SMTP_ALLOW_PRIVATE),
    )  # fmt: skip
