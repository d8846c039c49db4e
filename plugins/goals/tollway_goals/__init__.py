"""Tollway compute goals: an agent loop on the workers, with cases, events, questions to
people, signed approvals, result webhooks and code-host connections (docs/goals.md)."""
