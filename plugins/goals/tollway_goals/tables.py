"""The goals plugin's tables: goals, their cases, events, sessions and stored steps, and
what a case records (decisions, asks, result deliveries, the messages it sent). Money is
micro-USDC."""

from __future__ import annotations

from piccolo.columns import BigInt, Boolean, Integer, Text, Varchar
from piccolo.table import Table


class Goal(Table, tablename="goals_goals"):
    id = Varchar(length=64, primary_key=True)
    agent_id = Varchar(length=64, index=True)
    request_id = Varchar(length=64, unique=True)
    receipt_id = Varchar(length=64)  # the compute call's receipt: what the unspent budget is returned against
    goal = Text()
    status = Varchar(length=24)
    budget = BigInt()
    spent = BigInt()
    held = BigInt()
    cases_enabled = Boolean()
    max_depth = Integer()
    max_awake = Integer()
    done_check = Text(null=True, default=None)
    result_webhook_url = Text(null=True, default=None)
    webhook_secret = Varchar(length=128)
    created_ms = BigInt()
    updated_ms = BigInt()
    seq = BigInt()  # creation order, finer than milliseconds (an agent's newest goal)
    ended_ms = BigInt(null=True, default=None)
    returned = BigInt(
        null=True, default=None
    )  # what went back to the creator once the goal ended and no step was in flight


class Case(Table, tablename="goals_cases"):
    id = Varchar(length=64, primary_key=True)
    goal_id = Varchar(length=64, index=True)
    case_key = Varchar(length=200)
    state = Varchar(length=40)
    owner = Text(null=True, default=None)
    next_action = Text(null=True, default=None)
    due_date = Varchar(length=40, null=True, default=None)
    evidence = Text()
    task = Text()
    session_id = Varchar(length=64, null=True, default=None)
    parent_id = Varchar(length=64, null=True, default=None)
    depth = Integer()
    budget = BigInt(null=True, default=None)  # what the case may spend in all (its slices, less what it gave back)
    slice_given = BigInt(null=True, default=None)  # the slice last given, as the case shows it
    held = BigInt()
    spent = BigInt()
    step_limit = Integer(null=True, default=None)
    steps = BigInt()
    opened_ms = BigInt()
    updated_ms = BigInt()
    ended_ms = BigInt(null=True, default=None)


class Event(Table, tablename="goals_events"):
    id = Varchar(length=64, primary_key=True)
    goal_id = Varchar(length=64)
    event_id = Varchar(length=200)
    target = Varchar(length=8)
    case_key = Varchar(length=200, null=True, default=None)
    outcome = Varchar(length=16)
    created_ms = BigInt()


class Session(Table, tablename="goals_sessions"):
    id = Varchar(length=64, primary_key=True)
    goal_id = Varchar(length=64, index=True)
    case_id = Varchar(length=64, null=True, default=None)
    parent_session_id = Varchar(length=64, null=True, default=None)
    depth = Integer()
    status = Varchar(length=16)
    inbox = BigInt()  # wakes not yet taken in (events, replies) since the last run
    lease_owner = Varchar(length=128, null=True, default=None)
    lease_until_ms = BigInt()
    attempt = Integer()
    steps = BigInt()
    created_ms = BigInt()
    updated_ms = BigInt()


class Step(Table, tablename="goals_steps"):
    id = Varchar(length=64, primary_key=True)
    session_id = Varchar(length=64)
    seq = BigInt()
    kind = Varchar(length=16)  # message (a task or reply taken in), llm, tool
    body = Text()  # JSON, secrets masked
    cost = BigInt()
    created_ms = BigInt()


class Decision(Table, tablename="goals_decisions"):
    id = Varchar(length=64, primary_key=True)
    case_id = Varchar(length=64, index=True)
    decision = Text()
    reason = Text(null=True, default=None)
    created_ms = BigInt()


class Ask(Table, tablename="goals_asks"):
    id = Varchar(length=64, primary_key=True)
    case_id = Varchar(length=64, index=True)
    goal_id = Varchar(length=64)
    session_id = Varchar(length=64)
    kind = Varchar(length=16)
    status = Varchar(length=16)
    person_name = Text()
    person_address = Text()
    question = Text()
    shown = Text(null=True, default=None)
    shown_hash = Varchar(length=64, null=True, default=None)
    chase_after_s = Integer(null=True, default=None)
    chases = Integer()
    next_chase_ms = BigInt(null=True, default=None)
    deadline_ms = BigInt()
    escalated_ms = BigInt(null=True, default=None)
    answer = Text(null=True, default=None)
    message_id = Varchar(length=255, null=True, default=None, index=True)
    created_ms = BigInt()
    updated_ms = BigInt()


class Delivery(Table, tablename="goals_deliveries"):
    id = Varchar(length=64, primary_key=True)
    case_id = Varchar(length=64, index=True)
    goal_id = Varchar(length=64)
    webhook_id = Varchar(length=64, null=True, default=None)
    status = Varchar(length=16)
    reason = Text(null=True, default=None)
    result = Text()
    created_ms = BigInt()


class Sent(Table, tablename="goals_sent"):
    """One message a session sent through the service's tools (a text, a call, an email): a
    reply (or a call's result) naming its provider id wakes that session."""

    id = Varchar(length=64, primary_key=True)
    request_id = Varchar(length=64, index=True)  # the delegated call's request id
    goal_id = Varchar(length=64)
    case_id = Varchar(length=64, null=True, default=None)  # None: the goal's root sent it
    session_id = Varchar(length=64)
    tool = Varchar(length=40)  # sms_send, voice_call, email_send
    channel = Varchar(length=8)  # sms, voice, email: the InboundMessage channel that answers it
    provider_id = Varchar(length=255, index=True)  # Twilio's message or call SID, the email's Message-ID
    recipient = Varchar(length=320)  # the number or address it went to
    created_ms = BigInt()


class Secret(Table, tablename="goals_secrets"):
    name = Varchar(length=64, primary_key=True)
    value = Text()
    created_ms = BigInt()


class Connection(Table, tablename="goals_connections"):
    id = Varchar(length=64, primary_key=True)
    agent_id = Varchar(length=64, index=True)
    name = Varchar(length=100)
    kind = Varchar(length=16)
    status = Varchar(length=16)  # pending, active, revoked
    state_hash = Varchar(length=64)  # SHA-256 of the one-time link's secret
    link_expires_ms = BigInt()
    link_used_ms = BigInt(null=True, default=None)
    installation_id = BigInt(null=True, default=None)
    repositories = Text()  # JSON list of owner/name
    created_ms = BigInt()
    updated_ms = BigInt()
    revoked_ms = BigInt(null=True, default=None)


TABLES = [Goal, Case, Event, Session, Step, Decision, Ask, Delivery, Sent, Secret, Connection]
