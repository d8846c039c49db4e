"""Tollway telephony: SMS and voice calls through Twilio (docs/telephony.md)."""
