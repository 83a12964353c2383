"""What the table registry knows of each Cassandra table (one `TableSpec` a table).

Retention, the purge, erasure and the partition report read these instead of keeping
lists of their own, so a new table is its module plus one line in `registry.TABLES`
(`tests/tables/test_registry.py` fails when a table of the keyspace has no spec).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from sessions_app.foundation.core.timebuckets import Width
from sessions_app.foundation.tables import retention_specs

# Mixed resolutions with TTLs of a year to ten years, rewritten by reseals: TWCS would
# keep SSTables alive for their longest-lived row, so these keep size-tiered compaction.
AGGREGATES = (
    retention_specs.AGGREGATES_HOUR,
    retention_specs.AGGREGATES_DAY,
    retention_specs.AGGREGATES_MONTH,
)

# The erasure step of a table that holds no user key but counts the user's events: the
# job reseals the buckets involved instead of deleting rows.
RESEAL = "_reseal"


class Keys(enum.Enum):
    """How the purge names a site's partitions of one bucket (the partition-key shape)."""

    HOUR_SHARDS = "(site_id, bucket, shard): every shard the hour recorded"
    LOG_SHARDS = "(site_id, minute, shard): every transaction-log shard"
    SITE_BUCKET = "(site_id, bucket)"
    GRANULARITIES = "(site_id, granularity, bucket): hour, day and month buckets each"
    USERS_FROM_COUNTS = "(site_id, user_key, bucket): users named by the sealed counts"


@dataclass(frozen=True)
class Purge:
    """Drop whole partitions wholly past the policy: probe (LIMIT 1), then delete."""

    probe: str
    delete: str
    width: Width | None  # None: the width comes from the keys (granularities, user widths)
    keys: Keys
    by_receipt: bool = False  # bucketed by receipt time, not event time
    weeks: bool = False  # GRANULARITIES: also week buckets (kept as long as days)


@dataclass(frozen=True)
class TableSpec:
    """One Cassandra table: its schema and how it is kept, purged, erased and sized."""

    model: Any  # the cqlengine model (its __table_name__, keys and __options__)
    policies: tuple[str, ...]  # retention policies whose TTL its rows carry (): a fixed TTL
    purge: Purge | None  # None: rows go by TTL alone
    erasure: str | None  # the erasure job's step (a method) that removes a user; None: no user data
    sizing: (
        str | None
    )  # the partition report's probe (domain/partitions/probes.py); None: not reported
    # CREATE INDEX statements (Storage-Attached Indexes) run after the schema sync, and
    # DROP INDEX IF EXISTS for the indexes a release retired.
    indexes: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return str(self.model.__table_name__)

    @property
    def partition_key(self) -> tuple[str, ...]:
        return tuple(self.model._partition_keys)

    @property
    def clustering(self) -> tuple[str, ...]:
        return tuple(self.model._clustering_keys)
