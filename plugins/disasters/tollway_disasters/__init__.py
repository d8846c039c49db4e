"""Tollway plugin `tollway-disasters`: FEMA disaster declarations for a US state or county."""
