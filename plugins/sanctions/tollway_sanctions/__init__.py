"""Tollway plugin: OFAC sanctions screening (`company_sanctions`, `person_sanctions`)."""
