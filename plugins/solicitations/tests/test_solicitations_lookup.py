"""`government_solicitations` run directly (a `ToolContext` over a replaying client):
the exact request SAM.gov receives, the normalisation of the recorded answer's quirks,
lookups by notice id, input rules, and the mapping of SAM.gov's failures.

The search answer is SAM.gov's real recorded page (fixtures/sam_gov/); the one-notice
answers are built from its real items (see `sam_replay.notice_answer`).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import httpx
import msgspec
import pytest
from sam_replay import API_KEY, RECORDED, RECORDED_QUERY, SamReplay, notice_answer, notice_query, recorded_item

from tollway import FieldErrors, ToolContext, ToolError
from tollway_solicitations import notice as parse
from tollway_solicitations import sam
from tollway_solicitations.tool import GOVERNMENT_SOLICITATIONS, SolicitationsAnswer, SolicitationsInput, check, facts

SETTINGS = {"sam_api_key": API_KEY}
AWARD = "f90fba9ebf6243ed8290c4ed4603c182"
NAVY = "ff9642d70c15414a85940230450bda32"


def value(**fields: Any) -> SolicitationsInput:
    return msgspec.convert(fields, SolicitationsInput, strict=True)


async def call(replay: SamReplay, v: SolicitationsInput, settings: dict[str, str] | None = None) -> SolicitationsAnswer:
    check(v)
    ctx = ToolContext(
        request_id="req_test", agent_id=None, http=replay.client(), settings=SETTINGS if settings is None else settings
    )
    return await GOVERNMENT_SOLICITATIONS.run(v, ctx)


def by_id(answer: SolicitationsAnswer) -> dict[str, parse.Solicitation]:
    return {n.notice_id: n for n in answer.result.solicitations}


# --- the recorded search ----------------------------------------------------------------


async def test_search_sends_sams_exact_query_and_keeps_its_order_and_total() -> None:
    replay = SamReplay().recorded()
    answer = await call(replay, value(posted_from="2026-01-01", posted_to="2026-02-02"))
    assert replay.queries() == [RECORDED_QUERY]  # dates MM/dd/yyyy, the key as api_key
    assert answer.result.total == 9334  # SAM.gov's totalRecords, not the 10 sent
    ids = [n.notice_id for n in answer.result.solicitations]
    assert len(ids) == 10 and ids == sorted(ids, reverse=True)  # SAM.gov's order (noticeId descending)
    assert answer.evidence.source == "SAM.gov" and answer.evidence.source_kind == "public"
    assert answer.evidence.as_of == "2026-02-02"  # the newest postedDate


async def test_limit_truncates_but_total_counts_all() -> None:
    replay = SamReplay().expect({**RECORDED_QUERY, "limit": "3"}, RECORDED.read_bytes())
    answer = await call(replay, value(posted_from="2026-01-01", posted_to="2026-02-02", limit=3))
    assert len(answer.result.solicitations) == 3  # SAM.gov sent 10 (a mirror ignoring limit); 3 kept
    assert answer.result.total == 9334


async def test_every_field_of_a_notice() -> None:
    answer = await call(SamReplay().recorded(), value(posted_from="2026-01-01", posted_to="2026-02-02"))
    n = by_id(answer)["fc82b63eeaa740d582bb8f72e06cd4f2"]
    assert n.title and n.solicitation_number
    assert (n.type, n.base_type, n.posted_on) == ("Solicitation", "Solicitation", "2026-02-02")
    assert n.response_deadline == "2026-02-10T10:00:00+09:00"  # kept as written, with its offset
    assert n.naics_codes == ["336611"] and n.classification_code == "J999"
    assert n.active is True and (n.archive_type, n.archive_date) == ("auto15", "2026-02-25")
    assert [c.type for c in n.points_of_contact] == ["primary", "secondary"]
    assert n.points_of_contact[0].fax is None  # "" is no value
    assert n.office == parse.SolicitationOffice(city="FPO", state="AP", zip="96349-1500", country_code="USA")
    assert n.place_of_performance == parse.SolicitationPlace(
        street_address=None, city="Chinhae", city_code="Chinhae", state="Gyeongnam", state_code="KR-48", zip=None,
        country="KOREA, SOUTH", country_code="KOR",
    )  # fmt: skip
    assert len(n.resource_links) == 5 and all(u.startswith("https://sam.gov/api/prod/opps/") for u in n.resource_links)
    assert n.ui_link == "https://sam.gov/workspace/contract/opp/fc82b63eeaa740d582bb8f72e06cd4f2/view"
    assert n.department == "DEPT OF DEFENSE" and n.agency_path and n.agency_path.startswith("DEPT OF DEFENSE.")


async def test_quirks_of_the_recorded_answer() -> None:
    notices = by_id(await call(SamReplay().recorded(), value(posted_from="2026-01-01", posted_to="2026-02-02")))
    # set-aside: null/null, ""/null (three items), "NONE"/"No Set aside used", "SBA"/...
    assert (notices[NAVY].set_aside_code, notices[NAVY].set_aside_description) == (None, None)
    blanks = ["f95fb353d56545478dd76819be1013fa", AWARD, "f82d4bb69ea147e19a2b30eaa987afb1"]
    assert all(recorded_item(i)["typeOfSetAside"] == "" for i in blanks)
    assert all(notices[i].set_aside_code is None for i in blanks)
    assert notices["fa64c8a8b90c428cba52cd7bbbbb7d50"].set_aside_code == "NONE"
    assert (
        notices["fd05ce5247fb4bc1b86e1ce4691bb74b"].set_aside_description == "Total Small Business Set-Aside (FAR 19.5)"
    )
    # a Solicitation first published as a Presolicitation
    changed = notices["fa01b8393b144750b2dddb5288592ec3"]
    assert (changed.type, changed.base_type) == ("Solicitation", "Presolicitation")
    # the award notice: no deadline, an award object, an all-blank place of performance
    award = notices[AWARD]
    assert award.type == "Award Notice" and award.response_deadline is None
    assert award.archive_type == "autocustom"
    assert award.award == parse.SolicitationAward(
        date="2026-01-29", number="36F79726D0065", amount_usd=5_000_000.0,
        awardee=parse.SolicitationAwardee(
            name="CANCER CAREPOINT ASSOCIATES, LLC", uei_sam="LPZ2UE7MLNL5", cage_code="135X2", duns=None,
            location=parse.SolicitationPlace(street_address=None, city="ATLANTA", city_code=None, state="GA", state_code=None, zip="30329", country="GA", country_code=None),
        ),
    )  # fmt: skip
    assert award.place_of_performance is None  # every part of it was ""
    # null point of contact, office and place; null resourceLinks
    navy = notices[NAVY]
    assert navy.points_of_contact == [] and navy.office is None and navy.place_of_performance is None
    assert navy.resource_links == [] and navy.award is None
    # a contact whose name field holds a phone number is passed on as SAM.gov wrote it
    assert notices["f95fb353d56545478dd76819be1013fa"].points_of_contact[0].name == "Telephone: 7176053353"
    # a partial place of performance (country only)
    assert notices["fa64c8a8b90c428cba52cd7bbbbb7d50"].place_of_performance == parse.SolicitationPlace(
        street_address=None, city=None, city_code=None, state=None, state_code=None, zip=None, country="UNITED STATES", country_code="USA"
    )  # fmt: skip
    # "Yes" is active for every recorded item
    assert all(n.active for n in notices.values())


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("2026-03-02T16:00:00-05:00", "2026-03-02T16:00:00-05:00"), ("2025-02-24", "2025-02-24"), (None, None), ("", None),
     ("null", None), ("03/02/2026", None), ("2026-02-30", None)],
)  # fmt: skip
def test_response_deadline_forms(raw: Any, expected: str | None) -> None:
    assert parse.deadline(raw) == expected


def test_forms_seen_elsewhere_are_tolerated() -> None:
    """An older page (not kept): a bare-date deadline, `{}` place of performance, the older
    uiLink form; SAM.gov's own documentation writes the text "null" for a missing link,
    a posted date with a time, and active "No"."""
    item = {
        **recorded_item(NAVY),
        "responseDeadLine": "2025-02-24",
        "placeOfPerformance": {},
        "uiLink": f"https://sam.gov/opp/{NAVY}/view",
    }
    n = parse.parse_notice(item)
    assert (
        n
        and n.response_deadline == "2025-02-24"
        and n.place_of_performance is None
        and n.ui_link == f"https://sam.gov/opp/{NAVY}/view"
    )
    old = {
        **recorded_item(NAVY),
        "uiLink": "null",
        "description": "null",
        "postedDate": "2018-05-09 23:45:22+00",
        "active": "No",
        "naicsCodes": [],
    }
    n = parse.parse_notice(old)
    assert n and n.ui_link is None and n.posted_on == "2018-05-09" and n.active is False and n.naics_codes == ["335139"]


def test_items_without_a_notice_id_are_skipped() -> None:
    page = sam.parse_body(
        {"totalRecords": 2, "opportunitiesData": [{"noticeId": "", "title": "x"}, recorded_item(NAVY), "junk"]}
    )
    assert [n.notice_id for n in page.notices] == [NAVY] and page.total == 2


def test_department_is_split_only_when_the_code_path_agrees() -> None:
    assert parse.department("A.B.C", "1.2.3") == "A"
    assert parse.department("U.S. AGENCY.OFFICE", "1.2") is None  # a dot inside a name
    assert parse.department(None, None) is None


# --- filters and windows ------------------------------------------------------------------


async def test_filters_are_sent_as_sams_parameters() -> None:
    query = {"api_key": API_KEY, "postedFrom": "01/11/2026", "postedTo": "02/10/2026", "limit": "5", "offset": "0",
             "title": "signal light", "ncode": "335139", "ptype": "k"}  # fmt: skip
    replay = SamReplay().expect(query, notice_answer(recorded_item(NAVY)))
    v = value(keywords="  signal   light ", naics="335139", notice_type="Combined Synopsis/Solicitation", limit=5)
    answer = await call(replay, v)  # no dates: the 30 days up to today (2026-02-10 here)
    assert replay.queries() == [query]
    assert [n.notice_id for n in answer.result.solicitations] == [NAVY]


@pytest.mark.parametrize(
    ("fields", "window"),
    [({}, ("01/11/2026", "02/10/2026")), ({"posted_to": "2026-01-31"}, ("01/01/2026", "01/31/2026")),
     ({"posted_from": "2025-02-11"}, ("02/11/2025", "02/10/2026")),
     ({"posted_from": "2026-02-11"}, ("02/11/2026", "02/11/2026"))],  # a caller already a day ahead of UTC
)  # fmt: skip
async def test_default_windows(fields: dict[str, str], window: tuple[str, str]) -> None:
    query = {"api_key": API_KEY, "postedFrom": window[0], "postedTo": window[1], "limit": "10", "offset": "0"}
    replay = SamReplay().expect(query, notice_answer())
    answer = await call(replay, value(**fields))
    assert answer.result.total == 0 and answer.evidence.as_of is None


async def test_a_notice_by_id_is_looked_for_in_the_last_364_days() -> None:
    replay = SamReplay().expect(notice_query(NAVY), notice_answer(recorded_item(NAVY)))
    answer = await call(replay, value(notice_id=NAVY.upper()))  # either case; SAM.gov's ids are lower case
    assert replay.queries() == [notice_query(NAVY)]
    assert answer.result.total == 1 and [n.notice_id for n in answer.result.solicitations] == [NAVY]


async def test_a_notice_by_id_in_a_given_window() -> None:
    query = notice_query(NAVY, "01/01/2026", "02/02/2026")
    replay = SamReplay().expect(query, notice_answer(recorded_item(NAVY)))
    answer = await call(replay, value(notice_id=NAVY, posted_from="2026-01-01", posted_to="2026-02-02"))
    assert answer.result.total == 1


async def test_a_notice_by_id_counts_only_an_exact_match() -> None:
    replay = SamReplay().expect(notice_query(NAVY), notice_answer(recorded_item(AWARD)))  # a mirror ignoring noticeid
    answer = await call(replay, value(notice_id=NAVY))
    assert answer.result.total == 0 and answer.result.solicitations == []


async def test_no_data_found_404_is_an_empty_answer() -> None:
    body = b'{"error":{"code":"404","message":"No Data found"}}'  # built: the documented message, no recording exists
    replay = SamReplay().expect(notice_query(NAVY), body, status=404)
    answer = await call(replay, value(notice_id=NAVY))
    assert answer.result.total == 0


async def test_empty_search_without_a_result_list() -> None:
    replay = SamReplay().expect(RECORDED_QUERY, b'{"totalRecords":0,"limit":10,"offset":0}')
    answer = await call(replay, value(posted_from="2026-01-01", posted_to="2026-02-02"))
    assert answer.result.total == 0 and answer.result.solicitations == []


# --- input rules --------------------------------------------------------------------------


def problems(**fields: Any) -> dict[str, str]:
    with pytest.raises(FieldErrors) as info:
        check(value(**fields))
    return {e.field: e.message for e in info.value.errors}


def test_notice_id_and_a_search_are_exclusive() -> None:
    assert set(problems(notice_id=NAVY, keywords="valve", naics="33", notice_type="Solicitation")) == {
        "keywords",
        "naics",
        "notice_type",
    }
    check(value(notice_id=NAVY, posted_from="2026-01-01"))  # a window is allowed with an id


def test_window_rules_name_every_failing_field() -> None:
    future = (dt.datetime.now(dt.UTC) + dt.timedelta(days=3)).date().isoformat()
    assert set(problems(posted_from=future, posted_to=future, keywords="  !")) == {
        "posted_from",
        "posted_to",
        "keywords",
    }
    assert set(problems(posted_from="2026-02-02", posted_to="2026-01-01")) == {"posted_to"}
    assert set(problems(posted_from="2025-01-01", posted_to="2026-01-01")) == {"posted_to"}  # a whole year
    assert set(problems(posted_from="2024-01-01")) == {"posted_from"}  # to today
    check(value(posted_from="2025-01-02", posted_to="2026-01-01"))  # less than a year
    check(value(posted_from="2024-02-29", posted_to="2025-02-28"))


@pytest.mark.parametrize(
    "fields",
    [{"notice_id": "ff9642d70c15414a85940230450bda3"}, {"notice_id": "zz9642d70c15414a85940230450bda32"},
     {"naics": "1"}, {"naics": "1234567"}, {"naics": "33a"}, {"keywords": "x"}, {"keywords": "x" * 201},
     {"notice_type": "solicitation"}, {"limit": 0}, {"limit": 26}, {"posted_from": "02/01/2026"}, {"colour": "red"}],
)  # fmt: skip
def test_msgspec_refuses_bad_input(fields: dict[str, Any]) -> None:
    with pytest.raises(msgspec.ValidationError):
        value(**fields)


def test_examples_validate_and_price() -> None:
    for example in GOVERNMENT_SOLICITATIONS.examples:
        check(value(**example.input))
    assert GOVERNMENT_SOLICITATIONS.quote(value()) == 5000  # 0.005 USDC


# --- facts --------------------------------------------------------------------------------


async def test_facts_one_per_notice_and_one_for_the_search() -> None:
    v = value(posted_from="2026-01-01", posted_to="2026-02-02")
    answer = await call(SamReplay().recorded(), v)
    found = facts(v, answer)
    notices, searches = found[:-1], found[-1:]
    assert [f.key for f in notices] == [n.notice_id for n in answer.result.solicitations]
    award = next(f for f in notices if f.key == AWARD)
    assert award.attribute == "government_solicitations" and award.source == "SAM.gov" and award.public
    assert award.value == msgspec.to_builtins(by_id(answer)[AWARD]) and award.as_of == "2026-02-02"
    (search,) = searches
    assert len(search.key) == 64 and search.value == {"total": 9334, "notice_ids": [f.key for f in notices]}


async def test_a_lookup_by_id_records_no_search_fact() -> None:
    v = value(notice_id=NAVY)
    answer = await call(SamReplay().expect(notice_query(NAVY), notice_answer(recorded_item(NAVY))), v)
    assert [f.key for f in facts(v, answer)] == [NAVY]


# --- failures -----------------------------------------------------------------------------


async def test_no_key_is_provider_unavailable_naming_the_setting() -> None:
    replay = SamReplay().recorded()
    with pytest.raises(ToolError) as info:
        await call(replay, value(posted_from="2026-01-01", posted_to="2026-02-02"), settings={})
    assert info.value.code == "provider_unavailable" and info.value.status == 503
    assert "TOLLWAY_SOLICITATIONS_SAM_API_KEY" in info.value.message
    assert replay.seen == []


@pytest.mark.parametrize(
    ("status", "body", "code"),
    [(401, b"", "provider_auth"), (403, b'{"error":{"code":"API_KEY_INVALID","message":"An invalid api_key was supplied."}}', "provider_auth"),
     (400, b'{"message":"No api_key was supplied"}', "provider_auth"),  # SAM.gov's documented wording, whatever the status
     (429, b'{"error":{"code":"OVER_RATE_LIMIT"}}', "rate_limited"), (500, b"{}", "provider_unavailable"),
     (502, b"<html>Bad Gateway</html>", "provider_unavailable"), (404, b"", "provider_unavailable"),
     (400, b'{"message":"Date range must be 1 year(s) apart"}', "provider_unavailable"),
     (200, b"<html>maintenance</html>", "provider_unavailable"), (200, b'{"totalRecords": 3}', "provider_unavailable"),
     (200, b"[]", "provider_unavailable")],
)  # fmt: skip
async def test_upstream_failures(status: int, body: bytes, code: str, logs: pytest.LogCaptureFixture) -> None:
    replay = SamReplay().expect(RECORDED_QUERY, body, status=status, headers={"retry-after": "30"})
    with pytest.raises(ToolError) as info:
        await call(replay, value(posted_from="2026-01-01", posted_to="2026-02-02"))
    assert (info.value.code, info.value.status) == (code, 503)
    if code == "rate_limited":
        assert info.value.details["retry_after"] == 30
    assert_no_key(info.value, logs)


@pytest.mark.parametrize("exc", [httpx.ReadTimeout, httpx.ConnectError])
async def test_transport_failures_carry_no_url(exc: type[httpx.HTTPError], logs: pytest.LogCaptureFixture) -> None:

    def handler(request: httpx.Request) -> httpx.Response:
        raise exc(f"failed {request.url}", request=request)  # a message that holds the key

    ctx = ToolContext(
        request_id="req_test",
        agent_id=None,
        http=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
        settings=SETTINGS,
    )
    with pytest.raises(ToolError) as info:
        await GOVERNMENT_SOLICITATIONS.run(value(), ctx)
    assert info.value.code == "provider_unavailable"
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert_no_key(info.value, logs)


async def test_the_clients_log_lines_are_scrubbed(logs: pytest.LogCaptureFixture) -> None:
    await call(SamReplay().recorded(), value(posted_from="2026-01-01", posted_to="2026-02-02"))
    lines = [r.getMessage() for r in logs.records if r.name == "httpx"]
    assert lines and any("api_key=[redacted]" in line for line in lines)
    assert API_KEY not in logs.text


def assert_no_key(error: ToolError, logs: pytest.LogCaptureFixture) -> None:
    assert API_KEY not in f"{error.code} {error.message} {error.details!r}"
    assert API_KEY not in logs.text


def test_every_notice_type_has_its_ptype_code() -> None:
    import typing

    from tollway_solicitations.tool import NoticeType

    assert set(typing.get_args(NoticeType)) == set(sam.NOTICE_TYPES)
    assert len(set(sam.NOTICE_TYPES.values())) == len(sam.NOTICE_TYPES)
