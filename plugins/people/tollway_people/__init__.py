"""Tollway people research: a cited public work profile of one person, with operator opt-outs."""
