"""Content safety of outbound messages (email, SMS, voice, letters): the operator's rules,
applied by `ToolContext.check_content` before a tool sends anything. A message naming a term
of `TOLLWAY_CONTENT_BLOCKLIST` (whole words, any case), or carrying more email addresses and
phone numbers than `TOLLWAY_CONTENT_MAX_PERSONAL_DATA` (default 20), fails with
`content_blocked` (a job so refused is refunded)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from tollway._core.plugin_api.tool import ToolError

DEFAULT_MAX_PERSONAL = 20
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,253}\.[A-Za-z]{2,63}")
_PHONE = re.compile(r"(?<![\w+])\+?\d(?:[\s().-]?\d){8,14}(?!\w)")


@dataclasses.dataclass(frozen=True)
class Rules:
    blocked: tuple[str, ...] = ()
    max_personal: int = DEFAULT_MAX_PERSONAL

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Rules:
        terms = tuple(t.strip() for t in (env.get("TOLLWAY_CONTENT_BLOCKLIST") or "").split(",") if t.strip())
        raw = (env.get("TOLLWAY_CONTENT_MAX_PERSONAL_DATA") or "").strip()
        return cls(blocked=terms, max_personal=int(raw) if raw.isdigit() else DEFAULT_MAX_PERSONAL)

    def problem(self, *texts: str | None) -> str | None:
        """Why these texts may not be sent, or None."""
        text = "\n".join(t for t in texts if t)
        for term in self.blocked:
            if re.search(rf"(?<!\w){re.escape(term)}(?!\w)", text, flags=re.IGNORECASE):
                return f"it contains a term the operator blocks ({term!r})"
        personal = len(_EMAIL.findall(text)) + len(_PHONE.findall(_EMAIL.sub(" ", text)))
        if personal > self.max_personal:
            return f"it carries {personal} email addresses and phone numbers, more than {self.max_personal}"
        return None

    def check(self, *texts: str | None) -> None:
        why = self.problem(*texts)
        if why is not None:
            raise ToolError(
                "content_blocked", f"Blocked by content safety: {why}. Adjust the message and retry.", status=400
            )
