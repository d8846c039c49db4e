"""Tollway plugin `tollway-{{family}}`: the {{family}} tool family.

The kernel finds it through the `tollway` entry point `tollway_{{family}}.plugin`.
"""
