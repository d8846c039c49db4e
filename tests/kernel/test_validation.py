"""core.validation: a body that does not convert is refused naming every failing
field, with its dotted/indexed path and words saying what is expected; the happy
path converts with msgspec alone."""

from __future__ import annotations

import datetime
import enum
import uuid
from typing import Annotated, Literal

import msgspec
import pytest

from tollway._core.basics import validation
from tollway._core.basics.errors import ServiceError
from tollway._core.basics.validation import FieldError, FieldErrors, convert, field_error, problems_of


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Size(msgspec.Struct, forbid_unknown_fields=True):
    weight: Annotated[float, msgspec.Meta(gt=0, le=1000)]
    unit: Literal["kg", "lb"] = "kg"


class Line(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    item_id: Annotated[str, msgspec.Meta(min_length=1)]
    qty: Annotated[int, msgspec.Meta(ge=1, multiple_of=2)]
    size: Size | None = None


class Order(msgspec.Struct, forbid_unknown_fields=True):
    items: Annotated[list[Line], msgspec.Meta(min_length=1, max_length=3)]
    colour: Colour = Colour.RED
    tags: dict[Literal["gift", "rush"], bool] = {}
    span: tuple[int, int] = (0, 1)
    note: Annotated[str, msgspec.Meta(max_length=5)] | None = None
    discount: Annotated[float, msgspec.Meta(ge=0, lt=1)] = 0.0


def refusal(obj: object, type_: object = Order, **kw: str) -> ServiceError:
    with pytest.raises(ServiceError) as err:
        convert(obj, type_, **kw)
    assert err.value.status == 400
    return err.value


def test_every_failing_field_is_named_with_its_path_and_what_is_expected() -> None:
    body = {
        "items": [
            {"itemId": "a", "qty": 2},
            {"itemId": "", "qty": 3, "size": {"weight": 0, "unit": "stone"}},
            {"qty": "two", "size": {"weight": "heavy", "depth": 1}},
        ],
        "colour": "green",
        "tags": {"gift": "yes", "later": True},
        "span": [1],
        "note": "too long",
        "discount": 1,
        "extra": None,
    }
    err = refusal(body)
    assert err.code == "invalid_request"
    assert err.details == [
        {"field": "items[1].itemId", "message": "items[1].itemId must not be empty"},
        {"field": "items[1].qty", "message": "items[1].qty must be at least 1, a multiple of 2"},
        {"field": "items[1].size.weight", "message": "items[1].size.weight must be greater than 0 and at most 1000"},
        {"field": "items[1].size.unit", "message": 'items[1].size.unit must be "kg" or "lb"'},
        {"field": "items[2].qty", "message": "items[2].qty must be a whole number of at least 1, a multiple of 2"},
        {
            "field": "items[2].size.weight",
            "message": "items[2].size.weight must be a number greater than 0 and at most 1000",
        },
        {"field": "items[2].size.depth", "message": "items[2].size.depth is not an accepted field"},
        {"field": "items[2].itemId", "message": "items[2].itemId is required (a non-empty string)"},
        {"field": "colour", "message": 'colour must be "red" or "blue"'},
        {"field": "tags.gift", "message": "tags.gift must be true or false"},
        {"field": "tags.later", "message": '"later" is not an accepted key of tags: keys must be "gift" or "rush"'},
        {"field": "span", "message": "span must be a list of exactly 2 items"},
        {"field": "note", "message": "note must be at most 5 characters"},
        {"field": "discount", "message": "discount must be at least 0 and less than 1"},
        {"field": "extra", "message": "extra is not an accepted field"},
    ]
    assert err.message == (
        "15 fields are invalid: items[1].itemId, items[1].qty, items[1].size.weight, items[1].size.unit, items[2].qty, "
        "items[2].size.weight, items[2].size.depth, items[2].itemId, colour, tags.gift and 5 more."
    )


def test_lists_sizes_nulls_and_the_body_itself() -> None:
    assert refusal({"items": []}).details == [{"field": "items", "message": "items must have 1 to 3 items"}]
    assert refusal({"items": [{"itemId": "a", "qty": 2}], "note": 5}).details == [
        {"field": "note", "message": "note must be a string of at most 5 characters or null"}
    ]
    assert refusal({"items": None}).details == [{"field": "items", "message": "items must be a list of 1 to 3 items"}]
    assert refusal([1, 2]).details == [{"field": "$", "message": "the body must be an object"}]
    assert refusal({}).details == [{"field": "items", "message": "items is required (a list of 1 to 3 items)"}]


def test_invalid_input_tools_get_the_first_fields_kind_as_code() -> None:
    unknown = refusal({"colour": "red", "x": 1, "items": "none"}, error="invalid_input")
    assert unknown.code == "invalid_input" and unknown.extra == {"code": "unknown_field"}
    assert [d["field"] for d in unknown.details] == ["x", "items"]
    assert refusal({}, error="invalid_input").extra == {"code": "missing_field"}
    assert refusal({"items": 1}, error="invalid_input").extra == {"code": "bad_value"}


def test_a_long_list_of_bad_items_is_listed_up_to_the_cap() -> None:
    class Many(msgspec.Struct):
        values: list[int]

    err = refusal({"values": ["x"] * 150}, Many)
    assert len(err.details) == validation.MAX_DETAILS
    assert err.details[0] == {"field": "values[0]", "message": "values[0] must be a whole number"}
    assert err.message.startswith("More than 100 fields are invalid: values[0], values[1], ") and err.message.endswith(
        "values[9] and others."
    )
    few = refusal({"values": ["x"] * 12}, Many)
    assert len(few.details) == 12 and few.message.endswith("values[9] and 2 more.")


def test_the_happy_path_never_walks(monkeypatch: pytest.MonkeyPatch) -> None:
    def walked(*args: object, **kwargs: object) -> None:
        raise AssertionError("the type was walked for a valid body")

    monkeypatch.setattr(validation, "problems_of", walked)
    order = convert({"items": [{"itemId": "a", "qty": 2, "size": {"weight": 1.5}}], "tags": {"gift": True}}, Order)
    assert order.items[0].size.weight == 1.5 and order.tags == {"gift": True}


def test_valid_bodies_have_no_problems() -> None:
    for body in (
        {"items": [{"itemId": "a", "qty": 4}]},
        {"items": [{"itemId": "b", "qty": 2, "size": None}], "note": None, "colour": "blue"},
    ):
        msgspec.convert(body, Order, strict=True)
        assert problems_of(body, Order) == ([], 0)


def test_a_check_may_report_one_field_or_several() -> None:
    one = field_error(FieldError("year", "year must be 1950 or later"))
    assert one.details == [{"field": "year", "message": "year must be 1950 or later"}]
    several = field_error(
        FieldErrors([FieldError("make", "make is blank", "invalid_input"), FieldError("year", "year is too new")])
    )
    assert several.status == 400 and several.code == "invalid_input"
    assert several.details == [
        {"field": "make", "message": "make is blank"},
        {"field": "year", "message": "year is too new"},
    ]
    assert several.message == "2 fields are invalid: make, year."
    with pytest.raises(ValueError):
        FieldErrors([])


def test_dates_and_uuids_are_judged_by_msgspec_and_named() -> None:
    class Booking(msgspec.Struct):
        day: datetime.date
        ref: uuid.UUID
        at: datetime.datetime | None = None

    good = {"day": "2024-02-29", "ref": str(uuid.UUID(int=7)), "at": "2024-02-29T10:00:00Z"}
    assert convert(good, Booking).day == datetime.date(2024, 2, 29)
    err = refusal({"day": "2023-02-29", "ref": "nope", "at": 5}, Booking)
    assert err.details == [
        {"field": "day", "message": "day must be an ISO 8601 date (YYYY-MM-DD)"},
        {"field": "ref", "message": "ref must be a UUID"},
        {"field": "at", "message": "at must be an ISO 8601 date-time or null"},
    ]
