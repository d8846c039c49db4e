"""How names, companies, emails and domains are compared: the opt-out list's keys and the
hints a candidate is scored against use the same normal forms.

- a name: lower case, accents and punctuation dropped, white space collapsed;
- a company: a name's form less a trailing legal form (inc, llc, ltd, corp, co, gmbh, ...);
- an email: trimmed, lower case;
- a domain: lower case, without a leading `www.` or a trailing dot; a URL gives its host's.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import urlsplit

_LEGAL = {
    "inc", "incorporated", "llc", "ltd", "limited", "corp", "corporation", "co", "company", "plc", "gmbh",
    "ag", "sa", "sas", "bv", "nv", "pty", "srl", "lp", "llp",
}  # fmt: skip
_WORD = re.compile(r"[^\w\s]", re.UNICODE)


def name_form(text: str) -> str:
    plain = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in plain if not unicodedata.combining(c))
    return " ".join(_WORD.sub(" ", plain.lower()).split())


def company_form(text: str) -> str:
    words = name_form(text.replace("&", " and ")).split()
    while words and words[-1] in _LEGAL:
        words.pop()
    return " ".join(words)


def email_form(text: str) -> str:
    return text.strip().lower()


def domain_form(text: str) -> str:
    value = text.strip().lower()
    if "://" in value:
        value = urlsplit(value).hostname or ""
    value = value.split("/", 1)[0].rstrip(".")
    return value[4:] if value.startswith("www.") else value


def url_host(url: str) -> str:
    """The URL's host in domain form ("" when it has none); a scheme may be left out."""
    return domain_form(urlsplit(url if "://" in url else "https://" + url).hostname or "")


def within(host: str, domain: str) -> bool:
    """`host` is `domain` or one of its subdomains."""
    return bool(host) and bool(domain) and (host == domain or host.endswith("." + domain))


def companies_agree(a: str, b: str) -> bool:
    """Two company names (or a name and a domain) that name the same company: equal in
    company form, one's words starting the other's ("example" and "example corp"), or a
    domain whose first label is the name's words run together ("example.com", "Example")."""
    fa, fb = company_form(a), company_form(b)
    if not fa or not fb:
        return False
    if fa == fb or fa.startswith(fb + " ") or fb.startswith(fa + " "):
        return True
    label_a = domain_form(a).split(".")[0] if "." in a and " " not in a.strip() else None
    label_b = domain_form(b).split(".")[0] if "." in b and " " not in b.strip() else None
    return (label_a is not None and label_a in (fb.replace(" ", ""), fb.split()[0])) or (
        label_b is not None and label_b in (fa.replace(" ", ""), fa.split()[0])
    )


def opt_out_keys(*, name: str | None, companies: list[str], emails: list[str], domains: list[str]) -> list[str]:
    """Every opt-out key a call (or a found profile) is matched by: each email, each domain
    and every parent domain of it, the name with each company."""
    keys = [f"email:{email_form(e)}" for e in emails if e.strip()]
    for domain in domains:
        labels = domain_form(domain).split(".")
        keys += [f"domain:{'.'.join(labels[i:])}" for i in range(len(labels) - 1)]
    if name:
        keys += [f"name_company:{name_form(name)}|{company_form(c)}" for c in companies if company_form(c)]
    return list(dict.fromkeys(keys))
