"""Batches stay under a stock node's size limit (batch_size_fail_threshold, 50 KiB)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from cassandra.query import BatchStatement
from django.utils import timezone

from sessions_app.core.cql import (
    BATCH_MAX_BYTES,
    bind,
    bound_bytes,
    cassandra_session,
    pack_by_replicas,
    prepare,
)
from sessions_app.ingest.pipeline import Source, events_record
from sessions_app.tables import session_events, user_sessions
from sessions_app.tables.session_events import stored_events
from tests.ingest.conftest import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def _rows(session_id: uuid.UUID, count: int, size: int) -> list:
    insert = prepare(session_events.INSERT, write=True, idempotent=True)
    now = timezone.now()
    return [
        bind(
            insert,
            (session_id, uuid.uuid1(), uuid.uuid4(), "k", now, b"x" * size, 3600),
        )
        for _ in range(count)
    ]


def test_packed_batches_are_capped_by_bytes_and_keep_every_row_in_order():
    partitions = [_rows(uuid.uuid1(), 30, 3000) for _ in range(3)] + [_rows(uuid.uuid1(), 2, 10)]
    work = pack_by_replicas(partitions, partitions_per_batch=10, rows_per_batch=100)
    sent = []
    for statement, _ in work:
        rows = (
            list(statement._statements_and_parameters)
            if isinstance(statement, BatchStatement)
            else None
        )
        if rows is None:
            sent.append(statement)
            continue
        assert sum(len(v) for _, _, values in rows for v in values if isinstance(v, bytes)) <= (
            BATCH_MAX_BYTES
        )
        sent.extend(rows)
    assert len(sent) == 92
    assert sum(bound_bytes(r) for p in partitions for r in p) > 4 * BATCH_MAX_BYTES
    assert len(work) >= 9  # 270 KB of values: at least nine batches of 32 KiB


def test_the_node_has_stock_batch_limits():
    """The suite runs against Cassandra's default batch thresholds, as a stock cluster."""
    rows = cassandra_session().execute(
        "SELECT name, value FROM system_views.settings "
        "WHERE name IN ('batch_size_fail_threshold', 'batch_size_warn_threshold')"
    )
    assert {r["name"]: r["value"] for r in rows} == {
        "batch_size_fail_threshold": "50KiB",
        "batch_size_warn_threshold": "5KiB",
    }


def test_a_request_of_big_events_is_written_on_a_stock_node(site):
    """50 events with 3 KB of props each: 150 KB in one session partition, one user
    partition and one site hour, written in batches the node accepts."""
    at = timezone.now() - timedelta(minutes=5)
    big = {f"p{i}": "v" * 60 for i in range(45)}  # ~3 KB as JSON
    events = [
        event(at + timedelta(milliseconds=i), kind="custom", anon="big", name="b", props=big)
        for i in range(50)
    ]
    outcome = events_record(source=Source(site=site, received_at=timezone.now()), raw_events=events)
    assert outcome.accepted == 50, outcome.rejected
    [summary] = user_sessions.session_list(site_id=site.id, user_key="big")
    assert len(stored_events(session_id=summary["session_id"])) == 50
