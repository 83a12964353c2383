"""The partition-local terms of site_sessions rows written before rows had them.

An installation upgraded from a release whose rows lack `terms` runs
`manage.py site_sessions_terms` once: every day partition a site's sessions may still be
in (the sessions' retention) is read once with its dimension columns, and each row gets
the terms its columns give (tables/site_sessions.terms_of), under the TTL its summary
still has, so the terms expire with the row. Adding a term again changes nothing (a set).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from cassandra.concurrent import execute_concurrent_with_args
from django.conf import settings

from sessions_app.domain.ledger import policies
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.tables import retention_specs, site_sessions

MAX_DAYS = 800  # the days read back from now, whatever the retention says


def terms_backfill(site_id: uuid.UUID, now: datetime) -> int:
    """Give every row of the site's partitions within the sessions' retention its terms;
    return how many rows were written."""
    select = prepare(site_sessions.with_dimensions(site_sessions.SELECT_TERMED))
    add = prepare(site_sessions.ADD_TERMS, idempotent=True, write=True)
    keep = min(policies.ttl_seconds(retention_specs.SESSIONS) // 86_400 + 2, MAX_DAYS)
    oldest = timebuckets.floor(now - timedelta(days=keep - 1), "day")
    written = 0
    newest = timebuckets.floor(now + timedelta(days=1), "day")  # sessions a clock ahead
    for day in timebuckets.buckets_between(oldest, timebuckets.next_start(newest, "day"), "day"):
        for shard in range(max(1, settings.SESSION_SHARDS)):
            params = []
            for row in cassandra_session().execute(select, (site_id, day, shard)):
                terms = site_sessions.terms_of(site_id, day, shard, _dimensions(row))
                if terms:
                    params.append(
                        (_left(row["ttl"]), terms, site_id, day, shard, row["session_id"])
                    )
            execute_concurrent_with_args(
                cassandra_session(), add, params, concurrency=64, raise_on_first_error=True
            )
            written += len(params)
    return written


def _left(ttl: int | None) -> int:
    """The terms' TTL: a second less than the row had left when read (0: it has none), so
    a write in a later second than the read does not make them outlive the row."""
    return max(1, ttl - 1) if ttl else 0


def _dimensions(row: dict) -> dict[str, str | None]:
    return {d.name: row[d.column] for d in site_sessions.termed()}
