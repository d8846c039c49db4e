"""Tollway plugin `tollway-variants`: variant clinical significance from ClinVar."""
