"""Tollway person enrichment: profiles and work emails through the `enrichment` provider."""
