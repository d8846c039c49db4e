"""Tollway's physical mail: `physical_mail_send` through the `mail` provider `lob` (docs/postal.md)."""
