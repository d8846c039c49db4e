"""A watch paused because the credits could not pay runs again, automatically, in the
transaction that adds credits (a grant, a top-up, a refund) once they pay its next change;
the delivery loops find it on their next pass. It listens to the ledger's "credits changed"
event (`subscribe`), so the ledger never calls into watches."""

from __future__ import annotations

from tollway._core.basics.ids import now_ms
from tollway._core.credits import ledger
from tollway._core.watches.tables import Watch


async def resume_credit_paused(agent_id: str, balance: int) -> list[str]:
    """The ids of the agent's watches that were paused for `credits` and run again now."""
    rows = (
        await Watch.update({Watch.status: "running", Watch.pause_reason: None, Watch.updated_ms: now_ms()})
        .where(
            Watch.agent_id == agent_id,
            Watch.status == "paused",
            Watch.pause_reason == "credits",
            Watch.deleted_ms.is_null(),
            Watch.price_per_change <= balance,
        )
        .returning(Watch.id)
    )
    return [r["id"] for r in rows]


async def on_credits_changed(agent_id: str, delta: int, balance: int) -> None:
    """The ledger's "credits changed" event: added credits may resume paused watches."""
    if delta > 0:
        await resume_credit_paused(agent_id, balance)


def subscribe() -> None:
    """Resume credit-paused watches whenever an agent's credits grow (the kernel calls this)."""
    ledger.on_credits_changed("watches.resume", on_credits_changed)
