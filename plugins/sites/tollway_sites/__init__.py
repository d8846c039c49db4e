"""Tollway plugin: website build (docs/website.md)."""
