"""Tollway's predict family: one `predict` tool whose `model` is `simulation`
(simulation.py, expression.py) or `forecast` (forecast.py)."""
