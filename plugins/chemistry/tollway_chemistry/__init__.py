"""Tollway plugin `tollway-chemistry`: compound identity from PubChem."""
