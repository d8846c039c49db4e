"""Tollway plugin: browser tasks and browser profiles (docs/browser.md)."""
