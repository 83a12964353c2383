"""The rows of a plan's events, grouped by partition (session_events, user_events_by_bucket,
site_events_by_bucket), and its tallies (bucket_partials); its sessions' rows are
domain/ingest/session_rows.py's. Each table module names its row's parameters beside its
statement (`tables/*.Row`); this module fills them from the plan.
"""

from __future__ import annotations

import json
import uuid
import zlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

import orjson
from cassandra.query import BatchStatement, BatchType, PreparedStatement
from django.conf import settings

from sessions_app.domain.aggregates import tally
from sessions_app.domain.goals.defs import site_goals_recent
from sessions_app.domain.ingest.plan import EventRow, Plan
from sessions_app.domain.ledger import policies
from sessions_app.domain.ledger.widths import user_widths
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.batches import by_bytes
from sessions_app.foundation.core.cql import bind, consistency, prepare
from sessions_app.foundation.core.jsonfmt import dumps
from sessions_app.foundation.core.timebuckets import bucket_of
from sessions_app.foundation.tables import (
    bucket_partials,
    retention_specs,
    session_events,
    site_events_by_bucket,
    user_events_by_bucket,
)

Row = tuple[PreparedStatement, tuple[Any, ...]]
Keyed = tuple[tuple[Any, ...], Row]  # a row with the key of its partition


def event_statements(events: Iterable[EventRow]) -> Iterable[tuple[Any, Any]]:
    for rows in event_groups(events).values():
        yield from _single_partition(rows)


@dataclass
class _EventTables:
    """What the event rows of one call share: statements, TTL, user-bucket widths."""

    timeline: PreparedStatement
    backfilled: PreparedStatement
    by_user: PreparedStatement
    by_site: PreparedStatement
    ttl: int
    width: timebuckets.Width
    # Taken when the statements are built, just before they are sent: a redone
    # plan is judged by when it is applied, not when it was planned.
    backfill_before: datetime
    histories: dict[uuid.UUID, dict[str, list[tuple[datetime, timebuckets.Width]]]] = field(
        default_factory=dict
    )

    def user_bucket(self, e: EventRow, ts: datetime) -> datetime:
        widths = self.histories.get(e.site_id)
        if widths is None:  # one cached lookup per site and call
            widths = self.histories[e.site_id] = user_widths(e.site_id)
        history = widths.get(e.user_key)
        return bucket_of(ts, self.width, history) if history else timebuckets.floor(ts, self.width)


def _event_tables() -> _EventTables:
    return _EventTables(
        timeline=prepare(session_events.INSERT, idempotent=True, write=True),
        backfilled=prepare(session_events.INSERT_BACKFILLED, idempotent=True, write=True),
        by_user=prepare(user_events_by_bucket.INSERT, idempotent=True, write=True),
        by_site=prepare(site_events_by_bucket.INSERT, idempotent=True, write=True),
        ttl=policies.ttl_seconds(retention_specs.RAW_EVENTS),
        width=timebuckets.parse_width(settings.USER_EVENTS_BUCKET),
        backfill_before=datetime.now(UTC) - settings.TIMELINE_PREFIX_LAG / 2,
    )


class _Texts(NamedTuple):
    """An event's JSON fields as the tables store them (text, keys sorted)."""

    element: str | None
    props: str | None
    context: str | None
    layout: str | None


def event_groups(events: Iterable[EventRow]) -> dict[tuple[Any, ...], list[Row]]:
    """Return the rows of the three event tables, grouped by partition."""
    tables = _event_tables()
    groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for e in events:
        ts = timebuckets.as_utc(e.ts)
        texts = _Texts(_json(e.element), _json(e.props), _json(e.context), _json(e.layout))
        for key, row in (
            _by_session(tables, e, ts, texts),
            _by_user(tables, e, ts, texts),
            _by_site(tables, e, ts, texts),
        ):
            groups[key].append(row)
    return groups


def _by_session(tables: _EventTables, e: EventRow, ts: datetime, texts: _Texts) -> Keyed:
    statement = tables.backfilled if ts < tables.backfill_before else tables.timeline
    row = session_events.Row(
        session_id=e.session_id,
        event_id=e.event_id,
        site_id=e.site_id,
        user_key=e.user_key,
        ts=ts,
        doc=event_doc(e, ts, texts.element, texts.props),
        ttl=tables.ttl,
    )
    return ("s", e.session_id), (statement, row)


def _by_user(tables: _EventTables, e: EventRow, ts: datetime, texts: _Texts) -> Keyed:
    bucket = tables.user_bucket(e, ts)
    row = user_events_by_bucket.Row(
        site_id=e.site_id,
        user_key=e.user_key,
        bucket=bucket,
        event_id=e.event_id,
        session_id=e.session_id,
        type=e.type,
        name=e.name,
        ts=ts,
        url=e.url,
        element=texts.element,
        props=texts.props,
        context=texts.context,
        layout=texts.layout,
        ttl=tables.ttl,
    )
    return ("u", e.site_id, e.user_key, bucket), (tables.by_user, row)


def _by_site(tables: _EventTables, e: EventRow, ts: datetime, texts: _Texts) -> Keyed:
    hour = timebuckets.floor(ts, timebuckets.Width.HOUR)
    row = site_events_by_bucket.Row(
        site_id=e.site_id,
        bucket=hour,
        shard=e.shard,
        event_id=e.event_id,
        session_id=e.session_id,
        user_key=e.user_key,
        type=e.type,
        name=e.name,
        ts=ts,
        url=e.url,
        element=texts.element,
        props=texts.props,
        layout=texts.layout,
        is_bot=e.is_bot,
        late=e.late,
        ttl=tables.ttl,
    )
    return ("t", e.site_id, hour, e.shard), (tables.by_site, row)


def _single_partition(
    rows: list[tuple[PreparedStatement, tuple[Any, ...]]],
) -> Iterable[tuple[Any, Any]]:
    if len(rows) == 1:
        yield rows[0]  # _run binds it
        return
    bound = [bind(statement, params) for statement, params in rows]
    for start in range(0, len(bound), MAX_BATCH_ROWS):
        for run in by_bytes(bound[start : start + MAX_BATCH_ROWS]):
            if len(run) == 1:
                yield run[0], None
                continue
            batch = BatchStatement(
                batch_type=BatchType.UNLOGGED,
                consistency_level=consistency(settings.CASSANDRA_WRITE_CONSISTENCY),
            )
            batch.is_idempotent = True
            for row in run:
                batch.add(row)
            yield batch, None


def partial_shard(batch_id: uuid.UUID, shards: int) -> int:
    """Return the bucket_partials shard of a batch's tallies (the same for every hour)."""
    return zlib.crc32(batch_id.bytes) % max(1, shards)


def partial_rows(plan: Plan) -> Iterable[Keyed]:
    """One bucket_partials row per hour the plan's events fall in: their tally.

    Keyed by the batch id, so a redone plan overwrites its own tallies; the shard
    comes from the batch id and the plan's shard count, never from which events
    are left after an erasure filtered the plan.
    """
    if not plan.events:
        return
    insert = prepare(bucket_partials.INSERT, idempotent=True, write=True)
    ttl = policies.ttl_seconds(retention_specs.RAW_EVENTS)
    shard = partial_shard(plan.batch_id, plan.shards)
    by_hour: dict[datetime, list[dict[str, Any]]] = defaultdict(list)
    for e in plan.events:
        by_hour[timebuckets.floor(e.ts, timebuckets.Width.HOUR)].append(e.__dict__)
    starts = {
        s.state.session_id: (s.state.started_at, s.state.dimensions.get("source"))
        for s in plan.sessions
    }
    goals = site_goals_recent(plan.site_id)
    for hour, events in by_hour.items():
        counted = tally.tally(events, starts=starts, goals=goals)
        row = bucket_partials.Row(
            site_id=plan.site_id,
            bucket=hour,
            shard=shard,
            batch_id=plan.batch_id,
            events=counted.rows,
            tally=tally.tally_encode(counted),
            ids=tally.ids_digest(e["event_id"] for e in events),
            ttl=ttl,
        )
        yield ("p", plan.site_id, hour, shard), (insert, row)


MAX_BATCH_ROWS = 50


def _json(value: dict[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"), sort_keys=True)


def event_doc(e: EventRow, ts: datetime, element: str | None, props: str | None) -> bytes:
    """The event's JSON as the API serves it in a timeline (session_events.doc).

    The keys and values of EVENT_FIELDS as the columns read back: the
    time floored to the millisecond a Cassandra timestamp keeps, element and props
    the JSON text the other tables store (_json), embedded as it is.
    """
    return dumps(
        {
            "event_id": e.event_id,
            "site_id": e.site_id,
            "user_key": e.user_key,
            "type": e.type,
            "name": e.name,
            "ts": ts.replace(microsecond=ts.microsecond - ts.microsecond % 1000),
            "url": e.url,
            "referrer": e.referrer,
            "title": e.title,
            "element": None if element is None else orjson.Fragment(element),
            "props": None if props is None else orjson.Fragment(props),
            "context": e.context,
            "layout": e.layout,
            "late": e.late,
            "clamped": e.clamped,
            "is_bot": e.is_bot,
        }
    )
