"""The `smtp` email provider: builds each message (text, optional HTML, threading headers,
its own Message-ID) and submits it to the configured relay with aiosmtplib."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from email.message import EmailMessage
from email.utils import formatdate

import aiosmtplib
import dkim

from tollway import Provider, Setting, ToolError

from .headers import problems

KIND = "email"
HOST = Setting(KIND, "host", None, "The SMTP relay's host name.")
PORT = Setting(KIND, "port", "587", "The SMTP relay's port (587 submission with STARTTLS, 465 implicit TLS, 25 plain).")
USERNAME = Setting(KIND, "username", None, "The SMTP AUTH user name (unset: no AUTH).")
PASSWORD = Setting(KIND, "password", None, "The SMTP AUTH password.", secret=True)
SECURITY = Setting(KIND, "security", "starttls", "starttls (upgrade after connecting), tls (implicit TLS) or none.")
FROM_ADDRESS = Setting(KIND, "from_address", None, "The address the service sends from, e.g. agents@example.com.")
DKIM_DOMAIN = Setting(KIND, "dkim_domain", None, "Sign what is sent with DKIM for this domain (unset: not signed).")
DKIM_SELECTOR = Setting(
    KIND,
    "dkim_selector",
    "tollway",
    "The DKIM selector: the public key is published at <selector>._domainkey.<domain>.",
)
DKIM_PRIVATE_KEY = Setting(KIND, "dkim_private_key", None, "The DKIM private key (PEM, RSA or Ed25519).", secret=True)
TIMEOUT_S = 30.0


@dataclasses.dataclass(frozen=True)
class SmtpSender:
    host: str
    port: int
    security: str
    from_address: str
    username: str | None = dataclasses.field(default=None, repr=False)
    password: str | None = dataclasses.field(default=None, repr=False)
    dkim_domain: str | None = None
    dkim_selector: str = "tollway"
    dkim_key: bytes | None = dataclasses.field(default=None, repr=False)

    def message(
        self,
        *,
        to: str,
        subject: str,
        text: str,
        html: str | None = None,
        reply_to: str | None = None,
        in_reply_to: str | None = None,
        sender: str | None = None,
    ) -> EmailMessage:
        """The message; a header value that is not one line is refused (ToolError `invalid_input`, 400)."""
        bad = problems(
            (("sender", sender), ("to", to), ("subject", subject), ("reply_to", reply_to), ("in_reply_to", in_reply_to))
        )
        if bad:
            raise ToolError(
                "invalid_input",
                f"A mail header would not be one line: {', '.join(d['field'] for d in bad)}.",
                status=400,
                details=bad,
            )
        msg = EmailMessage()
        msg["From"] = sender or self.from_address
        msg["To"] = to
        msg["Subject"] = subject
        msg["Date"] = formatdate(localtime=False)
        domain = self.from_address.rpartition("@")[2] or "tollway.local"
        msg["Message-ID"] = f"<{uuid.uuid4().hex}@{domain}>"
        if reply_to:
            msg["Reply-To"] = reply_to
        if in_reply_to:
            msg["In-Reply-To"] = in_reply_to
            msg["References"] = in_reply_to
        msg.set_content(text)
        if html is not None:
            msg.add_alternative(html, subtype="html")
        return msg

    async def send(
        self,
        *,
        to: str,
        subject: str,
        text: str,
        html: str | None = None,
        reply_to: str | None = None,
        in_reply_to: str | None = None,
        sender: str | None = None,
    ) -> str:
        """Submit one message (DKIM-signed when configured); its Message-ID. A relay that refuses
        or cannot be reached raises a ToolError (`provider_unavailable`, or `provider_auth`)."""
        msg = self.message(
            to=to, subject=subject, text=text, html=html, reply_to=reply_to, in_reply_to=in_reply_to, sender=sender
        )
        raw = self.signed(msg.as_bytes())
        try:
            await aiosmtplib.send(
                raw,
                sender=self.from_address,
                recipients=[to],
                hostname=self.host,
                port=self.port,
                username=self.username,
                password=self.password,
                use_tls=self.security == "tls",
                start_tls=True if self.security == "starttls" else False,
                timeout=TIMEOUT_S,
            )
        except aiosmtplib.SMTPAuthenticationError as exc:
            raise ToolError("provider_auth", "The mail relay refused this service's login.", status=503) from exc
        except (aiosmtplib.SMTPException, OSError) as exc:
            raise ToolError(
                "provider_unavailable", f"The mail relay did not take the message ({type(exc).__name__}).", status=503
            ) from exc
        return str(msg["Message-ID"])

    def signed(self, raw: bytes) -> bytes:
        """`raw` with a DKIM-Signature header (relaxed/relaxed over the usual headers), when configured."""
        if not (self.dkim_domain and self.dkim_key):
            return raw
        headers = [
            b"from",
            b"to",
            b"subject",
            b"date",
            b"message-id",
            b"reply-to",
            b"in-reply-to",
            b"references",
            b"mime-version",
            b"content-type",
        ]
        signature = dkim.sign(
            raw,
            self.dkim_selector.encode(),
            self.dkim_domain.encode(),
            self.dkim_key,
            canonicalize=(b"relaxed", b"relaxed"),
            include_headers=headers,
        )
        return signature + raw


def _build(settings: Mapping[str, str], _http: object) -> SmtpSender:
    security = (settings.get("security") or "starttls").strip().lower()
    if security not in ("starttls", "tls", "none"):
        security = "starttls"
    return SmtpSender(
        host=settings["host"],
        port=int(settings.get("port") or 587),
        security=security,
        from_address=settings["from_address"],
        username=settings.get("username") or None,
        password=settings.get("password") or None,
        dkim_domain=settings.get("dkim_domain") or None,
        dkim_selector=settings.get("dkim_selector") or "tollway",
        dkim_key=(settings.get("dkim_private_key") or "").replace("\\n", "\n").encode() or None,
    )


SMTP = Provider(
    kind=KIND,
    name="smtp",
    build=_build,
    settings=(HOST, PORT, USERNAME, PASSWORD, SECURITY, FROM_ADDRESS, DKIM_DOMAIN, DKIM_SELECTOR, DKIM_PRIVATE_KEY),
    requires=(HOST, FROM_ADDRESS),
    description="SMTP submission to any relay (aiosmtplib): STARTTLS, implicit TLS or plain, with AUTH when a user name is set.",
)
