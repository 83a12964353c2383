"""The table registry: every Cassandra table's spec, in the order erasure clears them.

Retention (which tables a policy covers), the purge (which partitions can be named and
dropped), erasure (which step removes a user) and the partition report (which probe
measures it) read `TABLES`. A new table is a module in this package with its model,
statements and `SPEC`, and one line here.
"""

from __future__ import annotations

from importlib import import_module

from sessions_app.foundation.core.cql import cassandra_session, keyspace
from sessions_app.foundation.tables import (
    anonymous_links,
    bucket_aggregates,
    bucket_breakdowns,
    bucket_goals,
    bucket_heatmaps,
    bucket_partials,
    bucket_paths,
    bucket_products,
    bucket_users,
    bucket_vitals,
    failed_events,
    funnel_days,
    identity_links,
    ingest_stats,
    latest_sessions,
    pipeline_heartbeats,
    replay_assets,
    replay_chunks,
    rolling_counts,
    series_points,
    session_events,
    site_events_by_bucket,
    site_sessions,
    transaction_log,
    user_directory,
    user_events_by_bucket,
    user_number_keys,
    user_numbers,
    user_properties,
    user_sessions,
    user_sets,
)
from sessions_app.foundation.tables.spec import RESEAL, TableSpec

TABLES: tuple[TableSpec, ...] = (
    site_events_by_bucket.SPEC,
    bucket_partials.SPEC,
    user_events_by_bucket.SPEC,
    session_events.SPEC,
    replay_chunks.SPEC,
    replay_assets.SPEC,
    latest_sessions.SPEC,
    user_sessions.SPEC,
    site_sessions.SPEC,
    identity_links.SPEC,
    anonymous_links.SPEC,
    user_properties.SPEC,
    user_directory.SPEC,
    failed_events.SPEC,
    transaction_log.SPEC,
    bucket_users.SPEC,
    rolling_counts.SPEC,
    user_sets.SPEC,
    user_numbers.SPEC,
    user_number_keys.SPEC,
    bucket_aggregates.SPEC,
    bucket_breakdowns.SPEC,
    bucket_goals.SPEC,
    bucket_paths.SPEC,
    bucket_heatmaps.SPEC,
    bucket_vitals.SPEC,
    bucket_products.SPEC,
    funnel_days.SPEC,
    ingest_stats.SPEC,
    series_points.SPEC,
    pipeline_heartbeats.SPEC,
)
BY_NAME = {spec.name: spec for spec in TABLES}


def tables_of_policy(key: str) -> tuple[str, ...]:
    """Return the tables whose rows carry a retention policy's TTL."""
    return tuple(spec.name for spec in TABLES if key in spec.policies)


def erased_tables() -> tuple[str, ...]:
    """Return the tables an erasure deletes rows from, in the order the job does."""
    return tuple(spec.name for spec in TABLES if spec.erasure not in (None, RESEAL))


def indexes_ensure() -> int:
    """Create every table's Storage-Attached Indexes that do not exist yet and drop the
    retired ones; return how many statements ran (after sync_cassandra: `manage.py
    cassandra_indexes`)."""
    statements = [cql for spec in TABLES for cql in spec.indexes]
    for cql in statements:
        cassandra_session().execute(cql.format(ks=keyspace()), timeout=120)
    return len(statements)


def models() -> tuple[type, ...]:
    """Return every table's cqlengine model."""
    return tuple(spec.model for spec in TABLES)


def statement_text(name: str) -> str:
    """Return a table's statement by "table.CONSTANT" (the bench and the bind tests),
    with its dimension columns if the table stores dimensions (`with_dimensions`)."""
    table, _, constant = name.partition(".")
    module = import_module(f"sessions_app.foundation.tables.{BY_NAME[table].name}")
    text = str(getattr(module, constant))
    derive = getattr(module, "with_dimensions", None)
    return str(derive(text)) if derive else text
