"""funnel_days: a funnel definition's per-day partial result, cached once the day is sealed.

One partition per (site, day), a row per definition digest: the day's events that match
any of the funnel's steps (user, session, time, event id, which steps), the dimensions of
their sessions, how many events the day's scan read, and the day's summary: the outcome
of every unit whose steps cannot reach across midnight, and the events of the others.
Written when a sealed day is first asked for (features/funnels/results.py, fanned out as Celery
tasks); valid while the day's BucketState is sealed at the version stored with it. Every
day rollup (a reseal after late events or an erasure) deletes the day's partition, so no
cached row outlives the raw rows it came from. A row names users and sessions, so its TTL
ends it with the day's raw rows (ledger/policies.derived_ttl_seconds): an erasure after
those expired, which no longer finds the user's days, has nothing left to find here.

The table's schema (cqlengine, applied by sync_cassandra), every statement on it, and
its spec in the table registry (foundation/tables/registry.py).
"""

from __future__ import annotations

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model

from sessions_app.foundation.tables.retention_specs import table_options
from sessions_app.foundation.tables.spec import AGGREGATES as _AGGREGATES
from sessions_app.foundation.tables.spec import RESEAL, TableSpec

INSERT = """
INSERT INTO {ks}.funnel_days
  (site_id, day, digest, version, matches, summary, details, scanned)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) USING TTL ?
"""

# What a range that covers the whole day reads: the outcomes, not the events.
SELECT_SUMMARY = """
SELECT version, summary, scanned FROM {ks}.funnel_days
WHERE site_id = ? AND day = ? AND digest = ?
"""

# What a page of units reads of the days its units came from: their ids.
SELECT_DETAILS = """
SELECT details FROM {ks}.funnel_days WHERE site_id = ? AND day = ? AND digest = ?
"""

SELECT = """
SELECT version, matches, scanned FROM {ks}.funnel_days
WHERE site_id = ? AND day = ? AND digest = ?
"""

DELETE_DAY = "DELETE FROM {ks}.funnel_days WHERE site_id = ? AND day = ?"

POLICIES = _AGGREGATES


class FunnelDay(Model):
    """One funnel definition's matching events of one sealed day of a site."""

    __table_name__ = "funnel_days"
    __options__ = table_options(policies=POLICIES)

    site_id = columns.UUID(partition_key=True)
    day = columns.DateTime(partition_key=True)
    digest = columns.Text(primary_key=True)  # funnels/spec.digest
    version = columns.Integer()  # the day's BucketState.version when computed
    matches = columns.Blob()  # orjson: {"v", "events": [...], "sessions": {...}}
    # funnels/table.DaySummary: the outcomes of the units settled within the day
    # as columns, the events of the others, their sessions' dimensions
    summary = columns.Blob()
    details = columns.Blob()  # orjson: each settled unit's ids, in the summary's order
    scanned = columns.BigInt()  # raw events the day's scan read


SPEC = TableSpec(
    policies=POLICIES,
    model=FunnelDay,
    purge=None,
    erasure=RESEAL,
    sizing=None,
)
