"""A plan: every row one request writes, and its compact codec for the log and the applier queue."""

from __future__ import annotations

import uuid
import zlib
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import orjson

from sessions_app.domain.ingest.state import SessionState
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.ids import uuid_time


@dataclass(frozen=True)
class EventRow:
    """One accepted, sessionized event."""

    site_id: uuid.UUID
    user_key: str
    session_id: uuid.UUID
    event_id: uuid.UUID
    type: str
    ts: datetime
    name: str | None = None
    url: str | None = None
    referrer: str | None = None
    title: str | None = None
    element: dict[str, Any] | None = None
    props: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    layout: dict[str, Any] | None = None  # validation.ValidEvent.layout
    late: bool = False
    clamped: bool = False
    is_bot: bool = False
    shard: int = 0


@dataclass
class SessionSummary:
    """The user_sessions row of one session: its state, with the site and user key
    (overwritten whole on every update, at the plan's version)."""

    site_id: uuid.UUID
    user_key: str
    state: SessionState


@dataclass
class Plan:
    """Everything one accepted batch writes; `version` orders summary overwrites."""

    site_id: uuid.UUID
    batch_id: uuid.UUID
    received_at: datetime
    version: int  # write timestamp (µs) of summary rows (domain/ingest/versions.py): old plans lose
    events: list[EventRow] = field(default_factory=list)
    sessions: list[SessionSummary] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)  # (user_id, anonymous_id)
    # The site's event shards when planned: where the batch's tallies go (partial_shard).
    shards: int = 1
    # When the log entry is written, if not at received_at: a backfill (generated or demo
    # data) sends past arrivals now, and its entry must be where the redo looks.
    logged_at: datetime | None = None

    @property
    def log_time(self) -> datetime:
        """When the plan's transaction-log entry was written (names its log bucket)."""
        return self.logged_at or self.received_at


@dataclass(frozen=True)
class Failure:
    """A rejected event (or request) to keep in failed_events."""

    reason: str
    field: str
    payload: str
    source: str


@dataclass(frozen=True)
class Stats:
    """Data-quality counts of one request."""

    received: int
    accepted: int
    duplicates: int
    late: int
    clamped: int
    rejected: dict[str, int]


def _ms(value: datetime) -> int:
    return timebuckets.epoch_ms(timebuckets.as_utc(value))


def _from_ms(value: int) -> datetime:
    return timebuckets.EPOCH + timedelta(milliseconds=value)


_EVENT_TIMES = ("ts",)
_SESSION_TIMES = ("started_at", "last_seen_at")
_EVENT_UUIDS = ("site_id", "session_id", "event_id")
_SESSION_UUIDS = ("site_id", "session_id")


def _encode_event(event: EventRow) -> dict[str, Any]:
    # Straight from the instance's __dict__ (in field order), rather than
    # dataclasses.asdict, which deep-copies every value: this runs for every event on
    # the collector's hot path. None and False are left out (the decoder's defaults);
    # orjson writes UUIDs as str() does.
    data = {k: v for k, v in event.__dict__.items() if v is not None and v is not False}
    data["ts"] = _ms(data["ts"])
    return data


def _encode_summary(summary: SessionSummary) -> dict[str, Any]:
    # Flat, as the summary's row: its site and user key, then its state's fields without
    # the version (the plan's).
    record = {"site_id": summary.site_id, "user_key": summary.user_key, **summary.state.flat()}
    del record["version"]
    data = {k: v for k, v in record.items() if v is not None and v is not False}
    for name in _SESSION_TIMES:
        data[name] = _ms(data[name])
    return data


def _decoded(
    data: dict[str, Any], times: tuple[str, ...], uuids: tuple[str, ...], memo: dict
) -> dict[str, Any]:
    for key in times:
        data[key] = _from_ms(data[key])
    for key in uuids:
        text = data[key]
        value = memo.get(text)  # a plan's events share their site and session ids
        if value is None:
            value = memo[text] = uuid.UUID(text)
        data[key] = value
    return data


def _decode_summary(data: dict[str, Any], memo: dict, version: int) -> SessionSummary:
    data = _decoded(data, _SESSION_TIMES, _SESSION_UUIDS, memo)
    site_id, user_key = data.pop("site_id"), data.pop("user_key")
    state = SessionState.of_flat(data)
    state.version = version  # every summary of a plan is written at its version
    return SessionSummary(site_id=site_id, user_key=user_key, state=state)


def plan_encode(plan: Plan) -> bytes:
    """Serialize a plan for the transaction log (JSON, zlib-compressed).

    Format "v": 1 — records as JSON objects without their None/False fields, times
    in epoch milliseconds, UUIDs as strings (tests/ingest/test_plan.py holds a
    golden payload of this format).
    """
    body = {
        "v": 1,
        "site_id": plan.site_id,
        "batch_id": plan.batch_id,
        "received_at": _ms(plan.received_at),
        "version": plan.version,
        "events": [_encode_event(e) for e in plan.events],
        "sessions": [_encode_summary(s) for s in plan.sessions],
        "links": plan.links,
        "shards": plan.shards,
    }
    if plan.logged_at is not None:  # absent for a live batch: the format stays "v": 1
        body["logged_at"] = _ms(plan.logged_at)
    return zlib.compress(orjson.dumps(body), 1)


def plan_decode(payload: bytes) -> Plan:
    """Rebuild a plan from its transaction-log payload."""
    body = orjson.loads(zlib.decompress(payload))
    memo: dict[str, uuid.UUID] = {}
    return Plan(
        site_id=uuid.UUID(body["site_id"]),
        batch_id=uuid.UUID(body["batch_id"]),
        received_at=_from_ms(body["received_at"]),
        version=body["version"],
        events=[EventRow(**_decoded(e, _EVENT_TIMES, _EVENT_UUIDS, memo)) for e in body["events"]],
        sessions=[_decode_summary(s, memo, body["version"]) for s in body["sessions"]],
        links=[(u, a) for u, a in body["links"]],
        shards=body["shards"],
        logged_at=_from_ms(body["logged_at"]) if "logged_at" in body else None,
    )


def plan_without(plan: Plan, keys: frozenset[str] | set[str]) -> Plan:
    """Return the plan without the events, sessions and identity links of these user keys.

    A session goes if its user key, anonymous id or user id is one of them; its
    events go with it.
    """
    sessions = [
        s
        for s in plan.sessions
        if s.user_key not in keys
        and (s.state.anonymous_id or "") not in keys
        and (s.state.user_id or "") not in keys
    ]
    dropped = {s.state.session_id for s in plan.sessions} - {s.state.session_id for s in sessions}
    return replace(
        plan,
        events=[e for e in plan.events if e.user_key not in keys and e.session_id not in dropped],
        sessions=sessions,
        links=[(u, a) for u, a in plan.links if u not in keys and a not in keys],
    )


def version_of(received_at: datetime) -> int:
    """Return a receipt time in µs since the epoch: the least version of its plan."""
    delta = timebuckets.as_utc(received_at) - timebuckets.EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def hours_after(plan: Plan) -> set[datetime]:
    """The hours a plan changes without writing to them: those after one of its events
    and up to the latest event of that event's session, holding none of the plan's own
    events of that session. Empty unless an event arrived after later ones of its
    session; then those later hours' paths (domain/aggregates/paths.py) change, and reseal."""
    hour = timebuckets.Width.HOUR
    first: dict[uuid.UUID, datetime] = {}
    own: set[tuple[uuid.UUID, datetime]] = set()
    for e in plan.events:
        start = timebuckets.floor(e.ts, hour)
        own.add((e.session_id, start))
        if e.session_id not in first or start < first[e.session_id]:
            first[e.session_id] = start
    found: set[datetime] = set()
    for s in (summary.state for summary in plan.sessions):
        earliest = first.get(s.session_id)
        if earliest is None or s.last_seen_at < timebuckets.next_start(earliest, hour):
            continue
        end = timebuckets.next_start(timebuckets.floor(s.last_seen_at, hour), hour)
        following = timebuckets.next_start(earliest, hour)
        for later in timebuckets.buckets_between(following, end, hour):
            if (s.session_id, later) not in own:
                found.add(later)
    return found


def hours_started_before(plan: Plan) -> set[datetime]:
    """The start hours of the plan's human sessions that began before the hour of their
    first event in the plan: their visit counters as that hour's seal counted them
    (duration, page views, conversion: domain/aggregates/totals.count_started) changed, so an
    hour already sealed is reopened to count them again."""
    hour = timebuckets.Width.HOUR
    first: dict[uuid.UUID, datetime] = {}
    for e in plan.events:
        start = timebuckets.floor(e.ts, hour)
        if e.session_id not in first or start < first[e.session_id]:
            first[e.session_id] = start
    found: set[datetime] = set()
    for s in (summary.state for summary in plan.sessions):
        began = timebuckets.floor(uuid_time(s.session_id), hour)
        earliest = first.get(s.session_id)
        if not s.is_bot and earliest is not None and began < earliest:
            found.add(began)
    return found
