"""Tollway plugin `tollway-vehicles`: the NHTSA vehicle recalls lookup."""
