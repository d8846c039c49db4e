"""Tollway plugin `tollway-solicitations`: US federal contract opportunities from SAM.gov."""
