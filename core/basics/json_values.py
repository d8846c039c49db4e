"""`JSONValue` and `JSONObject`: a JSON value as the wire carries it, for annotations."""

from __future__ import annotations

from typing import Union

# What a webhook body, a job result or a served row holds.
JSONValue = Union[None, bool, int, float, str, list["JSONValue"], dict[str, "JSONValue"]]
JSONObject = dict[str, JSONValue]
