"""The agents pages: who holds the most credits, one agent's balance and latest ledger rows,
and granting it credits through the same kernel service as the operator route
POST /v1/tools/internal/credits/grant (`Platform.grant_credits`), so the ledger stays exact."""

from __future__ import annotations

from tollway import to_micro

TOP = 50  # agents listed by credits held
LEDGER_ROWS = 50
TOKENS = 50  # an agent's latest access tokens listed
MAX_GRANT = 1_000_000  # USDC in one grant from the form: a typo's ceiling, not a policy


def grant_amount(text: str) -> int | str:
    """The amount a form asks to grant, in micro-USDC, or why it cannot be granted."""
    try:
        amount = to_micro(text.strip())
    except ValueError:
        return "The amount must be a decimal number of USDC with at most 6 decimals, e.g. 5 or 0.25."
    if amount <= 0:
        return "The amount must be more than 0."
    if amount > MAX_GRANT * 1_000_000:
        return f"One grant from the console is at most {MAX_GRANT} USDC."
    return amount
