"""Unlogged batches of bound rows: by partition, packed by replicas, sized for a stock node."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from cassandra.query import BatchStatement, BatchType, BoundStatement, PreparedStatement

from sessions_app.foundation.core.cql import bind, cassandra_session, keyspace

# Cassandra logs a warning for unlogged batches over more partitions than this
# (unlogged_batch_across_partitions_warn_threshold).
PARTITIONS_PER_BATCH = 10
# A run of one partition's rows stays under this many bytes of values. The node checks
# no size of a batch of one partition (CASSANDRA-10876); the margin is for a node that did.
BATCH_MAX_BYTES = 32 * 1024
# A batch of several partitions stays under this many bytes as the node counts them: a
# stock node logs, and returns to the driver, a warning for each batch over
# batch_size_warn_threshold (5 KiB), which under load was hundreds of lines a second.
BATCH_WARN_BYTES = 5 * 1024
PACKED_MAX_BYTES = BATCH_WARN_BYTES - 512
# What the node adds to a cell's value (timestamp, TTL, local deletion time), and to a
# row (its liveness info); collection elements are cells of their own. A partition adds
# some more (its deletion info, an empty static row): measured against the node's own
# count in tests/core/test_batches.py.
CELL_OVERHEAD = 16
PARTITION_OVERHEAD = 64
_COLLECTIONS = frozenset({"set", "map", "list"})
_collection_columns: dict[int, tuple[PreparedStatement, tuple[int, ...]]] = {}


def bound_bytes(row: BoundStatement) -> int:
    """The bytes of a bound statement's values (what counts toward a batch's size)."""
    return sum(len(v) for v in row.values if isinstance(v, bytes | bytearray))


def mutation_bytes(row: BoundStatement) -> int:
    """At least the bytes the node counts for this row against the batch size thresholds.

    The node counts each cell's value and overhead, not the partition key; counting the
    key's bytes too leaves a margin.
    """
    values = row.values
    size, cells = 0, 1
    for value in values:  # one pass: a seal sizes 10,000 rows
        if value.__class__ is bytes or isinstance(value, bytearray):
            size += len(value)
            cells += 1
    for index in _collections(row.prepared_statement):
        value = values[index]
        if isinstance(value, bytes | bytearray) and len(value) >= 4:
            cells += int.from_bytes(value[:4], "big", signed=True)  # its element count
    return size + CELL_OVERHEAD * cells


def partition_bytes(rows: Sequence[BoundStatement]) -> int:
    """At least the bytes the node counts for these rows of one partition in a batch."""
    return PARTITION_OVERHEAD + sum(map(mutation_bytes, rows))


def _collections(statement: PreparedStatement) -> tuple[int, ...]:
    entry = _collection_columns.get(id(statement))
    if entry is None or entry[0] is not statement:
        indexes = tuple(
            i
            for i, column in enumerate(statement.column_metadata)
            if column.type.typename in _COLLECTIONS
        )
        entry = _collection_columns[id(statement)] = (statement, indexes)
    return entry[1]


def by_bytes(
    rows: Sequence[BoundStatement], limit: int = BATCH_MAX_BYTES
) -> list[list[BoundStatement]]:
    """Consecutive runs of rows whose values add up to at most limit bytes (a row over
    the limit alone)."""
    runs: list[list[BoundStatement]] = []
    size = 0
    for row in rows:
        n = bound_bytes(row)
        if runs and size + n <= limit:
            runs[-1].append(row)
            size += n
        else:
            runs.append([row])
            size = n
    return runs


def replica_batches(
    statement: PreparedStatement,
    partitions: Iterable[list[tuple[Any, ...]]],
    *,
    partitions_per_batch: int = PARTITIONS_PER_BATCH,
    rows_per_batch: int = 200,
) -> list[tuple[Any, None]]:
    """Pack many small partitions' rows of one statement into unlogged batches.

    See `pack_by_replicas`; a seal writes a row set for each of thousands of users.
    """
    return pack_by_replicas(
        ([bind(statement, row) for row in rows] for rows in partitions),
        partitions_per_batch=partitions_per_batch,
        rows_per_batch=rows_per_batch,
    )


def pack_by_replicas(
    partitions: Iterable[list[BoundStatement]],
    *,
    partitions_per_batch: int = PARTITIONS_PER_BATCH,
    rows_per_batch: int = 200,
) -> list[tuple[Any, None]]:
    """Pack whole partitions' bound rows into unlogged batches for execute_windowed.

    Each batch holds whole partitions whose replicas are the same nodes, so the
    token-aware coordinator is a replica of all of them: it applies the batch
    locally and forwards it as one message per other replica, instead of one
    request per partition. A batch takes another partition only while it stays
    within rows_per_batch rows and PACKED_MAX_BYTES as the node counts them, under a
    stock node's batch_size_warn_threshold; a bigger partition goes alone, split into
    runs of BATCH_MAX_BYTES of values (the node checks no size of one partition's
    batch). A lone row goes as itself.
    """
    metadata = cassandra_session().cluster.metadata
    name = keyspace()
    everywhere = replicated_everywhere(metadata, name)
    # Each run of rows with the bytes the node counts for it, computed once.
    groups: dict[frozenset[Any], list[tuple[list[BoundStatement], int]]] = {}
    for rows in partitions:
        if not rows:
            continue
        # Hosts hash and compare by endpoint: the same replicas, in any order, are one key.
        key = (
            EVERY_HOST
            if everywhere
            else frozenset(metadata.get_replicas(name, rows[0].routing_key))
        )
        size = partition_bytes(rows)
        runs = groups.setdefault(key, [])
        if size <= BATCH_MAX_BYTES:  # the common small partition: one run, sized once
            runs.append((rows, size))
        else:  # a big partition: several runs
            runs.extend((run, partition_bytes(run)) for run in by_bytes(rows))
    work: list[tuple[Any, None]] = []
    for members in groups.values():
        packed: list[list[BoundStatement]] = []
        size = count = 0
        for bound, n in members:
            if packed and (
                len(packed) == partitions_per_batch
                or count + len(bound) > rows_per_batch
                or size + n > PACKED_MAX_BYTES
            ):
                work.append((_unlogged(packed), None))
                packed, size, count = [], 0, 0
            packed.append(bound)
            size += n
            count += len(bound)
        if packed:
            work.append((_unlogged(packed), None))
    return work


EVERY_HOST: frozenset[Any] = frozenset({"every host"})  # the replicas of every partition


def replicated_everywhere(metadata: Any, name: str) -> bool:
    """Whether every host holds a replica of every partition of the keyspace (one node;
    three nodes at replication factor 3): then all partitions share their replicas, and
    none needs looking up (a seal packs 5,000 users' partitions)."""
    hosts = list(metadata.all_hosts())
    found = metadata.keyspaces.get(name)
    strategy = found.replication_strategy if found is not None else None
    if len(hosts) <= 1:
        return True
    if strategy is None:
        return False
    factors = getattr(strategy, "dc_replication_factors", None)  # NetworkTopologyStrategy
    if factors is not None:
        in_dc = Counter(host.datacenter for host in hosts)
        return all(factor_replicas(factors.get(dc, 0)) >= n for dc, n in in_dc.items())
    factor = getattr(strategy, "replication_factor", None)  # SimpleStrategy
    return factor is not None and factor_replicas(factor) >= len(hosts)


def factor_replicas(value: Any) -> int:
    """A replication factor's replicas: "3/1" (transient replicas) counts 3."""
    try:
        return int(str(value).split("/")[0])
    except ValueError:
        return 0


def _unlogged(partitions: list[list[BoundStatement]]) -> Any:
    first = partitions[0][0]
    if len(partitions) == 1 and len(partitions[0]) == 1:
        return first
    batch = BatchStatement(batch_type=BatchType.UNLOGGED, consistency_level=first.consistency_level)
    batch.is_idempotent = all(row.is_idempotent for bound in partitions for row in bound)
    for bound in partitions:
        for row in bound:
            batch.add(row)
    return batch
