"""`tollway.query_int` and `tollway.query_flag`: defaults when absent or empty, the range and
the spellings they accept, and a 400 naming the parameter for anything else."""

from __future__ import annotations

import pytest

from tollway import Refusal, query_flag, query_int


def test_whole_numbers_within_the_range() -> None:
    assert query_int({}, "limit", 20, 1, 100) == 20
    assert query_int({"limit": ""}, "limit", 20, 1, 100) == 20
    assert (
        query_int({"limit": "1"}, "limit", 20, 1, 100) == 1 and query_int({"limit": "100"}, "limit", 20, 1, 100) == 100
    )
    for raw in ("0", "101", "-1", "1.5", "1e2", " 5", "ten", "9" * 40):
        with pytest.raises(Refusal) as refused:
            query_int({"limit": raw}, "limit", 20, 1, 100)
        assert refused.value.status == 400 and refused.value.code == "invalid_request"
        assert refused.value.details == [{"field": "limit", "message": "1 to 100"}], raw


def test_booleans() -> None:
    assert query_flag({}, "include_body") is False and query_flag({}, "include_body", True) is True
    assert [query_flag({"x": v}, "x") for v in ("true", "TRUE", "1", "false", "0")] == [True, True, True, False, False]
    for raw in ("yes", "2", "t"):
        with pytest.raises(Refusal) as refused:
            query_flag({"x": raw}, "x")
        assert refused.value.details == [{"field": "x", "message": "expected a boolean"}]
