"""Tollway plugin `tollway-verify`: email address verification (`email_verification`)."""
