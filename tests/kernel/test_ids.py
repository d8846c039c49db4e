"""The kernel's id and time formatting: `iso` writes what datetime's formatting writes for
any millisecond (its cache of the last second never leaks into another second), and ids
are the prefix and 24 fresh hex digits; sorted ids the prefix, the milliseconds and
randomness, in creation order."""

from __future__ import annotations

import datetime as _dt
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tollway._core.basics.ids import iso, new_id, now_ms, sorted_id


def reference(ms: int) -> str:
    dt = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


@settings(max_examples=500, deadline=None)
@given(st.lists(st.integers(min_value=-(10**12), max_value=10**14), min_size=1, max_size=6))
def test_iso_is_the_datetime_form_for_any_sequence_of_times(times: list[int]) -> None:
    for ms in times:  # several in a row: the cached second must not leak into the next
        assert iso(ms) == reference(ms)


def test_iso_at_second_boundaries_and_before_1970() -> None:
    for ms in (0, 999, 1000, 1001, -1, -999, -1000, -1001, 1_764_300_000_999, 1_764_300_001_000):
        assert iso(ms) == reference(ms)
    assert iso(1_764_300_000_123) == "2025-11-28T03:20:00.123Z"
    for ms in range(1_764_300_000_000, 1_764_300_700_000, 997):  # more seconds than are kept
        assert iso(ms) == reference(ms)


def test_ids_are_the_prefix_and_24_fresh_hex_digits() -> None:
    ids = {new_id("rcpt") for _ in range(1000)}
    assert len(ids) == 1000
    assert all(re.fullmatch(r"rcpt_[0-9a-f]{24}", i) for i in ids)


def test_sorted_ids_are_the_milliseconds_then_randomness_and_sort_in_creation_order() -> None:
    before = now_ms()
    ids = [sorted_id("txn") for _ in range(2000)]
    after = now_ms()
    assert len(set(ids)) == 2000
    assert all(re.fullmatch(r"txn_[0-9a-f]{24}", i) for i in ids)
    stamps = [int(i[4:15], 16) for i in ids]
    assert stamps == sorted(stamps) and before <= stamps[0] and stamps[-1] <= after
    # an id of a later millisecond sorts after, whatever the random digits
    assert all(a < b for a, b in zip(ids, ids[1:], strict=False) if a[4:15] != b[4:15])
    assert len({i[15:] for i in ids}) > 1990  # the 13 random digits differ


def test_a_forked_child_draws_its_own_randomness() -> None:
    """The randomness drawn ahead is the parent's alone: a child forked with some of it left
    makes other ids than the parent makes next."""
    import os

    sorted_id("txn")  # the parent has pieces left
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids' random digits, to the parent
        try:
            os.write(write, "".join(sorted_id("txn")[15:] for _ in range(50)).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        child = pipe.read()
    ours = "".join(sorted_id("txn")[15:] for _ in range(50))
    child_pieces = {child[i : i + 13] for i in range(0, len(child), 13)}
    assert len(child_pieces) == 50 and not child_pieces & {ours[i : i + 13] for i in range(0, len(ours), 13)}


def test_threads_never_share_a_sorted_id() -> None:
    import threading

    made: list[list[str]] = [[] for _ in range(8)]

    def make(out: list[str]) -> None:
        out.extend(sorted_id("txn") for _ in range(3000))

    threads = [threading.Thread(target=make, args=(out,)) for out in made]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({i for out in made for i in out}) == 8 * 3000
