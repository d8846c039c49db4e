"""The telephony plugin's forward-only migrations (docs/storage.md)."""
