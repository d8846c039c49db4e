"""Inline plugins and helpers for the kernel's own tests."""
