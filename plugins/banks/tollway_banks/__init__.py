"""Tollway plugin `tollway-banks`: the FDIC BankFind bank profile lookup."""
