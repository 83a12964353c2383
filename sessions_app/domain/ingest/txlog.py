"""The transaction log, written before the 200 (with failed events, ingest stats); marks."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cassandra.query import PreparedStatement
from django.conf import settings

from sessions_app.domain.ingest.plan import Failure, Plan, Stats, plan_encode
from sessions_app.domain.ledger import policies
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.batches import pack_by_replicas
from sessions_app.foundation.core.cql import bind, cassandra_session, prepare
from sessions_app.foundation.core.ids import time_uuid
from sessions_app.foundation.core.sendall import execute_all
from sessions_app.foundation.tables import (
    failed_events,
    ingest_stats,
    retention_specs,
    transaction_log,
)


@dataclass(frozen=True)
class LogEntry:
    """One transaction-log entry: its key, when it was logged, whether it is applied."""

    minute: datetime
    shard: int
    batch_id: uuid.UUID
    logged_at: datetime
    applied: bool
    payload: bytes


def txlog_unapplied(
    *, site_id: uuid.UUID, minute: datetime, shards: int, received_before: datetime
) -> list[LogEntry]:
    """Return the log entries of one log bucket not yet applied, oldest first."""
    state = prepare(transaction_log.SELECT_STATE)
    futures = [
        (shard, cassandra_session().execute_async(state, (site_id, minute, shard)))
        for shard in range(shards)
    ]
    found = []
    for shard, future in futures:
        for row in future.result():  # paged by the driver's fetch size
            if row["applied"] or timebuckets.from_driver(row["received_at"]) >= received_before:
                continue
            found.append((row["batch_id"].time, shard, row["batch_id"]))
    found.sort()
    keys = [(s, b) for _, s, b in found]
    entries = (txlog_entry(site_id=site_id, minute=minute, shard=s, batch_id=b) for s, b in keys)
    return [e for e in entries if e is not None]


def txlog_entry(
    *, site_id: uuid.UUID, minute: datetime, shard: int, batch_id: uuid.UUID
) -> LogEntry | None:
    """Return one log entry, or None once it is gone (its TTL ended, or an erasure emptied it)."""
    row = (
        cassandra_session()
        .execute(prepare(transaction_log.SELECT_ENTRY), (site_id, minute, shard, batch_id))
        .one()
    )
    if row is None:
        return None
    return LogEntry(
        minute=minute,
        shard=shard,
        batch_id=batch_id,
        logged_at=timebuckets.from_driver(row["received_at"]),
        applied=bool(row["applied"]),
        payload=row["payload"],
    )


LOG_WIDTH = timebuckets.Width.TEN_MINUTES


def log_key(plan: Plan) -> tuple[uuid.UUID, datetime, int, uuid.UUID]:
    """Return the primary key of a plan's transaction_log row."""
    shard = plan.batch_id.int % settings.TXLOG_SHARDS
    return plan.site_id, timebuckets.floor(plan.log_time, LOG_WIDTH), shard, plan.batch_id


def mark_params(plan: Plan) -> transaction_log.Mark:
    """Return the parameters of the statement that marks a plan's entry applied."""
    # The mark carries the log's TTL too: an UPDATE cell without one would get the
    # table's backstop and outlive the rest of its row.
    site_id, minute, shard, batch_id = log_key(plan)
    ttl = policies.ttl_seconds(retention_specs.TRANSACTION_LOG)
    return transaction_log.Mark(ttl, site_id, minute, shard, batch_id)


Work = list[tuple[PreparedStatement, tuple[Any, ...]]]


def log_write(
    plan: Plan | None,
    *,
    site_id: uuid.UUID,
    batch_id: uuid.UUID,
    received_at: datetime,
    failures: Sequence[Failure],
    stats: Stats,
) -> bytes | None:
    """Durably store the plan, the failed events and the request's counts (before the 200).

    Returns the plan's log payload (what the applier queue carries), if it had events.
    """
    work: Work = []
    payload = None
    if plan is not None and plan.events:
        payload = plan_encode(plan)
        work.append(_entry(plan, payload))
    work.extend(_failed(site_id, batch_id, received_at, failures))
    work.append(_counts(site_id, batch_id, received_at, stats))
    # The log entry, the counts and any failed events are separate partitions; where
    # they share their replicas (always, on one node or with RF = nodes) they go as
    # one unlogged batch: one request to wait for instead of two or more.
    execute_all(pack_by_replicas([bind(statement, params)] for statement, params in work))
    return payload


def _entry(plan: Plan, payload: bytes) -> tuple[PreparedStatement, transaction_log.Row]:
    site_id, minute, shard, batch_id = log_key(plan)
    row = transaction_log.Row(
        site_id=site_id,
        minute=minute,
        shard=shard,
        batch_id=batch_id,
        received_at=plan.log_time,
        event_count=len(plan.events),
        payload=payload,
        ttl=policies.ttl_seconds(retention_specs.TRANSACTION_LOG),
    )
    return prepare(transaction_log.INSERT, idempotent=True, write=True), row


def _failed(
    site_id: uuid.UUID, batch_id: uuid.UUID, received_at: datetime, failures: Sequence[Failure]
) -> Work:
    if not failures:
        return []
    statement = prepare(failed_events.INSERT, idempotent=True, write=True)
    day = timebuckets.floor(received_at, timebuckets.Width.DAY)
    ttl = policies.ttl_seconds(retention_specs.FAILED_EVENTS)
    return [
        (
            statement,
            failed_events.Row(
                site_id=site_id,
                day=day,
                failed_id=time_uuid(received_at, f"{batch_id}:{index}"),
                received_at=received_at,
                reason=failure.reason,
                field=failure.field,
                source=failure.source,
                payload=failure.payload[: settings.FAILED_EVENT_PAYLOAD_BYTES] or None,
                ttl=ttl,
            ),
        )
        for index, failure in enumerate(failures)
    ]


def _counts(
    site_id: uuid.UUID, batch_id: uuid.UUID, received_at: datetime, stats: Stats
) -> tuple[PreparedStatement, ingest_stats.Row]:
    row = ingest_stats.Row(
        site_id=site_id,
        bucket=timebuckets.floor(received_at, timebuckets.Width.HOUR),
        batch_id=batch_id,
        received=stats.received,
        accepted=stats.accepted,
        duplicates=stats.duplicates,
        late=stats.late,
        clamped=stats.clamped,
        rejected=stats.rejected,
    )
    return prepare(ingest_stats.INSERT, idempotent=True, write=True), row


def log_mark_applied(plan: Plan) -> None:
    """Mark a plan's transaction-log entry applied (when nothing of it is left to apply)."""
    cassandra_session().execute(
        prepare(transaction_log.MARK_APPLIED, idempotent=True, write=True), mark_params(plan)
    )
