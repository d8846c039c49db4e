"""The three lists shipped in `data/`: disposable domains, free-mail domains and role
local parts (each file says what it holds and where it comes from), read once."""

from __future__ import annotations

import functools
from importlib.resources import files

_DATA = files("tollway_verify") / "data"


def _read(name: str) -> frozenset[str]:
    lines = (line.split("#", 1)[0].strip().lower() for line in (_DATA / name).read_text(encoding="utf-8").splitlines())
    return frozenset(line for line in lines if line)


@functools.cache
def disposable_domains() -> frozenset[str]:
    return _read("disposable_domains.txt")


@functools.cache
def free_domains() -> frozenset[str]:
    return _read("free_domains.txt")


@functools.cache
def role_accounts() -> frozenset[str]:
    return _read("role_accounts.txt")


def _self_and_parents(domain: str) -> list[str]:
    """`a.b.example.com` -> [a.b.example.com, b.example.com, example.com, com]."""
    labels = domain.lower().rstrip(".").split(".")
    return [".".join(labels[i:]) for i in range(len(labels))]


def is_disposable(domain: str, mail_hosts: list[str] | tuple[str, ...] = ()) -> bool:
    """The domain (ASCII form), or one of its parents, is a disposable service's; or one of
    its mail hosts is under such a domain (a disposable service receiving for a new name)."""
    listed = disposable_domains()
    return any(name in listed for host in (domain, *mail_hosts) for name in _self_and_parents(host))


def is_free(domain: str) -> bool:
    """The domain (ASCII form) is a free consumer mail provider's (matched exactly)."""
    return domain.lower().rstrip(".") in free_domains()


def role_key(local_part: str) -> str:
    """The local part as roles are compared: lower case, without a `+tag`, without `.`, `-`, `_`."""
    base = local_part.lower().split("+", 1)[0]
    return base.replace(".", "").replace("-", "").replace("_", "")


def is_role(local_part: str) -> bool:
    return role_key(local_part) in role_accounts()
