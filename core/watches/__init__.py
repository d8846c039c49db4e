"""Watches: the resource, the sources that detect changes, and the delivery that charges
each change once (docs/watches.md)."""
