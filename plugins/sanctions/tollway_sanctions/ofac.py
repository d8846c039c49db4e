"""OFAC's "legacy" CSV files -> entries (the format is described in tests/fixtures/README.md).

No header row; `-0-` (with or without a trailing space) means empty; most files
end with a Ctrl-Z (0x1A) byte; lines end with CRLF (LF in older sets). The main
file's `remarks` may be cut off and continued in the *_comments.csv file.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

import msgspec


class OtherName(msgspec.Struct, frozen=True):
    kind: str  # aka | fka | nka
    name: str


class Address(msgspec.Struct, frozen=True):
    street: str | None
    city: str | None  # OFAC's "city/state/postal code" column
    country: str | None


class Entry(msgspec.Struct, frozen=True):
    """A sanctions match's `entry` (docs/sanctions.md); frozen and comparable, so two loads diff by `==`."""

    number: int
    name: str
    programs: list[str]
    title: str | None
    remarks: str | None
    other_names: list[OtherName]
    addresses: list[Address]


@dataclass(frozen=True)
class ParsedEntry:
    entry: Entry
    is_person: bool  # type `individual`; everything else (entities, vessels, aircraft) is not


class ListFormatError(ValueError):
    """A file that is not one of OFAC's CSV files."""


def _rows(data: bytes, file: str, width: int) -> list[list[str | None]]:
    text = data.decode("utf-8", errors="replace")
    text = text.replace("\x1a", "")
    out: list[list[str | None]] = []
    for row in csv.reader(io.StringIO(text, newline="")):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) < width:
            raise ListFormatError(f"{file}: a row has {len(row)} columns, expected {width}: {row[:3]!r}")
        out.append([_value(c) for c in row[:width]])
    return out


def _value(cell: str) -> str | None:
    cell = cell.strip()
    if not cell or cell == "-0-":
        return None
    return cell


def _number(cell: str | None, file: str) -> int:
    try:
        return int(cell or "")
    except ValueError:
        raise ListFormatError(f"{file}: entry number {cell!r} is not an integer") from None


def _programs(cell: str | None) -> list[str]:
    if not cell:
        return []
    return [p.strip(" []") for p in cell.split("] [") if p.strip(" []")]


def parse_list(
    prim: bytes, add: bytes, alt: bytes, comments: bytes, *, names: tuple[str, str, str, str]
) -> dict[int, ParsedEntry]:
    """The four files of one list -> entries by number (file names for error messages)."""
    f_prim, f_add, f_alt, f_comments = names
    overflow: dict[int, str] = {}
    for row in _rows(comments, f_comments, 2):
        num = _number(row[0], f_comments)
        if row[1]:
            overflow[num] = overflow.get(num, "") + row[1]
    addresses: dict[int, list[Address]] = {}
    for row in _rows(add, f_add, 6):
        num = _number(row[0], f_add)
        street, city, country = row[2], row[3], row[4]
        if street or city or country:  # OFAC keeps all-empty address rows; they say nothing
            addresses.setdefault(num, []).append(Address(street=street, city=city, country=country))
    others: dict[int, list[OtherName]] = {}
    for row in _rows(alt, f_alt, 5):
        num = _number(row[0], f_alt)
        kind = (row[2] or "aka").lower().strip(".")
        if row[3]:
            others.setdefault(num, []).append(
                OtherName(kind=kind if kind in ("aka", "fka", "nka") else "aka", name=row[3])
            )
    entries: dict[int, ParsedEntry] = {}
    for row in _rows(prim, f_prim, 12):
        num = _number(row[0], f_prim)
        if not row[1]:
            raise ListFormatError(f"{f_prim}: entry {num} has no name")
        remarks = row[11]
        if num in overflow:
            remarks = (remarks or "") + overflow[num]
        entries[num] = ParsedEntry(
            entry=Entry(
                number=num,
                name=row[1],
                programs=_programs(row[3]),
                title=row[4],
                remarks=remarks,
                other_names=others.get(num, []),
                addresses=addresses.get(num, []),
            ),
            is_person=(row[2] or "").strip().lower() == "individual",
        )
    if not entries:
        raise ListFormatError(f"{f_prim}: no entries")
    return entries
