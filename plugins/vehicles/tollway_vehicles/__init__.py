"""Tollway plugin `tollway-vehicles`: NHTSA vehicle recalls, complaints and VIN decoding."""
