"""Tollway plugin `tollway-drugs`: the openFDA drug adverse events lookup."""
