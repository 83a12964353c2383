"""Batches stay under a stock node's size limits: one partition's runs under
batch_size_fail_threshold (50 KiB), several partitions together under
batch_size_warn_threshold (5 KiB, as the node counts them), so writing logs no warning."""

from __future__ import annotations

import logging
import re
import uuid
from datetime import timedelta

import pytest
from cassandra.query import BatchStatement, BatchType
from django.utils import timezone

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.foundation import dimensions
from sessions_app.foundation.core.batches import (
    BATCH_MAX_BYTES,
    BATCH_WARN_BYTES,
    PACKED_MAX_BYTES,
    bound_bytes,
    factor_replicas,
    pack_by_replicas,
    partition_bytes,
    replicated_everywhere,
)
from sessions_app.foundation.core.cql import bind, cassandra_session, keyspace, prepare
from sessions_app.foundation.tables import session_events, site_sessions, user_sessions
from tests.support.events import event
from tests.support.sessions import stored_events

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


# A site_sessions row's dimensions, by name (foundation/dimensions.py).
DIMENSIONS = {
    "country": "DE",
    "device": "desktop",
    "browser": "Firefox",
    "os": "Linux",
    "source": "direct",
    "medium": "none",
    "campaign": "",
    "entry": "/",
    "exit": "/p0",
}


def _summary(shard: int, pages: int) -> object:
    """A site_sessions row whose sets hold `pages` paths and three event names."""
    upsert = prepare(
        site_sessions.with_dimensions(site_sessions.UPSERT), write=True, idempotent=True
    )
    now = timezone.now()
    day, site_id = now.replace(hour=0, minute=0, second=0, microsecond=0), uuid.uuid4()
    return bind(
        upsert,
        (
            1,
            3600,
            "u",
            False,
            now,
            now,
            60,
            5,
            3,
            False,
            False,
            *(DIMENSIONS.get(d.name) for d in dimensions.explored()),
            {f"/p{i}" for i in range(pages)},
            {"a", "b", "c"},
            site_sessions.terms_of(site_id, day, shard, DIMENSIONS),
            site_id,
            day,
            shard,
            uuid.uuid1(),
        ),
    )


def _node_counted(rows: list) -> int:
    """The size the node reports for an unlogged batch of these rows (over 5 KiB)."""
    batch = BatchStatement(batch_type=BatchType.UNLOGGED)
    for row in rows:
        batch.add(row)
    future = cassandra_session().execute_async(batch)
    future.result()
    warnings = future.warnings or []
    [size] = [int(m[1]) for w in warnings if (m := re.search(r"is of size (\d+)", w))]
    return size


def test_a_rows_estimate_is_never_below_what_the_node_counts():
    for partitions in (
        [_rows(uuid.uuid1(), 4, 700) for _ in range(3)],  # blobs, several rows a partition
        [[_summary(shard, pages)] for shard, pages in enumerate([1, 40, 100, 100])],  # sets
        [_rows(uuid.uuid1(), 1, 30) for _ in range(40)],  # many small partitions
    ):
        counted = _node_counted([row for rows in partitions for row in rows])
        estimate = sum(map(partition_bytes, partitions))
        assert counted <= estimate <= counted * 1.3, (counted, estimate)


def test_packed_batches_of_several_partitions_stay_under_the_warn_threshold(caplog):
    caplog.set_level(logging.WARNING, logger="cassandra")
    partitions = (
        [_rows(uuid.uuid1(), n % 7 + 1, 180) for n in range(40)]
        + [[_summary(shard, 100)] for shard in range(8)]
        + [_rows(uuid.uuid1(), 12, 2000)]  # over the budget alone: goes alone
    )
    work = pack_by_replicas(partitions, partitions_per_batch=10, rows_per_batch=100)
    for statement, _ in work:
        cassandra_session().execute(statement)
    assert len(work) < sum(map(len, partitions)) / 3  # still packed
    # The node warns for a batch of several partitions over 5 KiB; the driver logs it.
    assert [r.getMessage() for r in caplog.records if r.name.startswith("cassandra")] == []
    assert PACKED_MAX_BYTES < BATCH_WARN_BYTES


def test_every_partition_of_a_keyspace_on_every_host_shares_one_group_of_replicas():
    metadata = cassandra_session().cluster.metadata
    hosts = list(metadata.all_hosts())
    # The test node: one host holds every partition, as get_replicas says of each.
    assert len(hosts) == 1 and replicated_everywhere(metadata, keyspace())
    for token in (b"a", b"user-1", b"\x00" * 16):
        assert set(metadata.get_replicas(keyspace(), token)) == set(hosts)
    found = [factor_replicas(v) for v in (3, "3", "3/1", "x")]
    assert found == [3, 3, 3, 0]
