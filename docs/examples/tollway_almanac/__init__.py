"""The worked example of docs/plugins.md: the `almanac` family, a plugin in three files.

Every code example of that page is taken from these files, and
tests/kernel/test_docs_plugins.py imports and runs them.
"""
