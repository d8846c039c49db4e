"""The operator console (docs/console.md)."""
