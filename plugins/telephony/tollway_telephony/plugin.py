"""Hook implementations: the `twilio` providers of the `sms` and `voice` kinds, the tools
`sms_send` and `voice_call`, Twilio's webhooks, the SMS inbox, the agents' own numbers (and
the periodic release of idle ones) and the plugin's tables.

Nothing runs here at import time beyond building the declarations."""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable
from pathlib import Path

from tollway import AppConfig, PeriodicTask, PluginContext, Provider, Route, Setting, Tool, hookimpl

from . import numbers
from .inbox import INBOX_ROUTES
from .settings import DEFAULT_PUBLIC_URL, SMS_PUBLIC_URL, VOICE_PUBLIC_URL
from .sms_tool import SMS_SEND
from .tables import TABLES
from .twilio import SMS_TWILIO, VOICE_TWILIO
from .voice_tool import VOICE_CALL
from .webhooks import WEBHOOK_ROUTES

log = logging.getLogger("tollway.telephony")
APP = AppConfig(
    app_name="telephony", migrations_folder_path=str(Path(__file__).parent / "migrations"), table_classes=list(TABLES)
)


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    register(SMS_TWILIO)
    register(VOICE_TWILIO)


@hookimpl
def register_tools(register: Callable[[Tool], None], context: PluginContext) -> None:
    # the cap's check before payment reads the service's settings and tables: bound to its context
    register(dataclasses.replace(SMS_SEND, admit_payer=functools.partial(numbers.admit_payer, context, "sms")))
    register(dataclasses.replace(VOICE_CALL, admit_payer=functools.partial(numbers.admit_payer, context, "voice")))


@hookimpl
def register_routes(register: Callable[[Route], None]) -> None:
    for route in (*WEBHOOK_ROUTES, *INBOX_ROUTES):
        register(route)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    register(SMS_PUBLIC_URL)
    register(VOICE_PUBLIC_URL)
    for setting in numbers.SETTINGS:
        register(setting)


@hookimpl
def register_periodic_tasks(register: Callable[[PeriodicTask], None]) -> None:
    for task in numbers.TASKS:
        register(task)


@hookimpl
def register_migrations(register: Callable[[AppConfig], None]) -> None:
    register(APP)


@hookimpl
async def startup(context: PluginContext) -> None:
    sms = (context.settings("sms").get("public_url") or DEFAULT_PUBLIC_URL).rstrip("/")
    voice = (context.settings("voice").get("public_url") or DEFAULT_PUBLIC_URL).rstrip("/")
    if sms != voice:
        log.warning(
            "telephony: TOLLWAY_SMS_PUBLIC_URL and TOLLWAY_VOICE_PUBLIC_URL differ (%s, %s): Twilio's callbacks of "
            "messages and of calls go to different hosts",
            sms,
            voice,
        )
