"""The `smtp` email provider against a real local SMTP server: the message as it arrives
(sender, recipient, subject, text and HTML parts, threading headers, its Message-ID), a
relay that cannot be reached, and how the provider is chosen and configured."""

from __future__ import annotations

import pytest

from tollway import ToolError
from tollway.testing import reserve_socket, smtp_server
from tollway_email.smtp import SMTP


def sender(env: dict[str, str]):
    settings = {k.removeprefix("TOLLWAY_EMAIL_").lower(): v for k, v in env.items()}
    return SMTP.build(settings, None)


async def test_a_message_arrives_whole_with_its_threading_headers() -> None:
    with smtp_server() as (mail, env):
        message_id = await sender(env).send(
            to="dana@example.com",
            subject="Approval needed",
            text="Open the link.",
            html="<p>Open the link.</p>",
            in_reply_to="<first@tollway.test>",
        )
    [got] = mail.messages
    assert mail.envelopes == [("agents@tollway.test", ["dana@example.com"])]
    assert got["Message-ID"] == message_id and message_id.endswith("@tollway.test>")
    assert (
        got["Subject"] == "Approval needed"
        and got["In-Reply-To"] == "<first@tollway.test>"
        and got["References"] == "<first@tollway.test>"
    )
    assert got.get_body(("plain",)).get_content().strip() == "Open the link."
    assert got.get_body(("html",)).get_content().strip() == "<p>Open the link.</p>"


async def test_each_message_gets_its_own_id() -> None:
    with smtp_server() as (mail, env):
        ids = {await sender(env).send(to="a@example.com", subject="s", text="t") for _ in range(3)}
    assert len(ids) == 3 and len(mail.messages) == 3


async def test_a_relay_that_cannot_be_reached_is_provider_unavailable() -> None:
    closed = reserve_socket()
    port = closed.getsockname()[1]
    closed.close()
    env = {
        "TOLLWAY_EMAIL_HOST": "127.0.0.1",
        "TOLLWAY_EMAIL_PORT": str(port),
        "TOLLWAY_EMAIL_SECURITY": "none",
        "TOLLWAY_EMAIL_FROM_ADDRESS": "agents@tollway.test",
        "TOLLWAY_EMAIL_PASSWORD": "hunter2-secret",
    }
    with pytest.raises(ToolError) as raised:
        await sender(env).send(to="a@example.com", subject="s", text="t")
    assert (
        raised.value.code == "provider_unavailable"
        and "hunter2" not in str(raised.value)
        and "hunter2" not in repr(sender(env))
    )


async def test_the_provider_is_listed_unconfigured_until_its_host_and_sender_are_set(kernel_factory) -> None:
    bare = await kernel_factory(installed={"tollway_email"})
    state = bare.providers.status("email")
    assert not state.configured and set(state.unset_settings) == {"TOLLWAY_EMAIL_HOST", "TOLLWAY_EMAIL_FROM_ADDRESS"}
    with smtp_server() as (mail, env):
        kernel = await kernel_factory(installed={"tollway_email"}, env=env)
        client, _cost = kernel.platform.provider("email")
        await client.send(to="a@example.com", subject="through the kernel", text="t")
    assert kernel.providers.status("email").configured and mail.messages[0]["Subject"] == "through the kernel"


async def test_a_header_value_that_is_not_one_line_is_refused_and_nothing_is_sent() -> None:
    """The provider's own guard, for callers other than the email tool (which refuses these before payment)."""
    with smtp_server() as (mail, env):
        client = sender(env)
        codes = {}
        for field, value in (
            ("subject", "a\u2028Bcc: eve@example.com"),
            ("to", "a@example.com\x0b"),
            ("in_reply_to", "<x@y>\x00"),
            ("reply_to", "r@example.com\x85"),
        ):
            args = {"to": "a@example.com", "subject": "s", "text": "t", field: value}
            with pytest.raises(ToolError) as raised:
                await client.send(**args)
            codes[field] = (raised.value.code, raised.value.status, [d["field"] for d in raised.value.details])
    assert codes == {field: ("invalid_input", 400, [field]) for field in ("subject", "to", "in_reply_to", "reply_to")}
    assert mail.messages == []
