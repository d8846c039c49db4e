"""The hooks of tollway-commerce: nothing is declared yet; the seller's routes come next
(docs/commerce.md). The `acp` package is usable on its own meanwhile."""
