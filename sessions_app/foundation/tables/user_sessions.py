"""user_sessions: a user's sessions, newest first.

The table's schema (cqlengine, applied by sync_cassandra), every statement on it, and
its spec in the table registry (foundation/tables/registry.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from cassandra.cqlengine import columns
from cassandra.cqlengine.models import Model

from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import bounded_limit
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.dimensions import enriched, statement
from sessions_app.foundation.tables import retention_specs
from sessions_app.foundation.tables.retention_specs import table_options
from sessions_app.foundation.tables.spec import TableSpec


def columns_of() -> tuple[str, ...]:
    """The enrichment columns of a session's summary (domain/ingest/enrich.py), in the
    registry's order."""
    return tuple(d.column for d in enriched())


def with_dimensions(template: str) -> str:
    """The statement with the enrichment columns where the template says MARK."""
    return statement(template, enriched())


# version: the summary's write time, which the next plan of the session must exceed
# (domain/ingest/versions.py).
SELECT_SESSIONS = """
SELECT session_id, started_at, last_seen_at, anonymous_id, user_id, event_count,
       pageview_count, click_count, entry_url, exit_url, converted, is_bot,
       <dimensions>, WRITETIME(event_count) AS version
FROM {ks}.user_sessions WHERE site_id = ? AND user_key = ? LIMIT ?
"""


def session_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        **row,
        "started_at": timebuckets.from_driver(row["started_at"]),
        "last_seen_at": timebuckets.from_driver(row["last_seen_at"]),
    }


def session_list(*, site_id: uuid.UUID, user_key: str, limit: int = 50) -> list[dict[str, Any]]:
    """Return a user's sessions, newest first."""
    rows = cassandra_session().execute(
        prepare(with_dimensions(SELECT_SESSIONS)), (site_id, user_key, bounded_limit(limit))
    )
    return [session_row(row) for row in rows]


def sessions_latest(*, site_id: uuid.UUID, user_keys: list[str]) -> dict[str, dict[str, Any]]:
    """Return each user's newest session summary (one parallel query per user)."""
    statement = prepare(with_dimensions(SELECT_SESSIONS))
    futures = [
        (k, cassandra_session().execute_async(statement, (site_id, k, 1))) for k in user_keys
    ]
    latest = {}
    for user_key, future in futures:
        row = future.result().one()
        if row is not None:
            latest[user_key] = session_row(row)
    return latest


SELECT_SESSION_ONE = """
SELECT session_id, user_key, started_at, last_seen_at, anonymous_id, user_id, event_count,
       pageview_count, click_count, entry_url, exit_url, converted, is_bot,
       <dimensions>
FROM {ks}.user_sessions WHERE site_id = ? AND user_key = ? AND session_id = ?
"""


def session_summary(
    *, site_id: uuid.UUID, user_key: str, session_id: uuid.UUID
) -> dict[str, Any] | None:
    """Return one session's summary row, or None."""
    if session_id.version != 1:
        return None
    row = (
        cassandra_session()
        .execute(prepare(with_dimensions(SELECT_SESSION_ONE)), (site_id, user_key, session_id))
        .one()
    )
    return session_row(row) if row else None


# How many sessions a user has, up to a cap (the Users page's column).
# A user described in one read (the users directory): the newest session's row first,
# the others counted (LIMIT: the cap on what is counted).
SELECT_DESCRIBE = """
SELECT session_id, last_seen_at, user_id, <dimensions>
FROM {ks}.user_sessions WHERE site_id = ? AND user_key = ? LIMIT ?
"""

SELECT_SPANS = """
SELECT session_id, started_at, last_seen_at FROM {ks}.user_sessions
WHERE site_id = ? AND user_key = ?
"""

DELETE_PARTITION = "DELETE FROM {ks}.user_sessions WHERE site_id = ? AND user_key = ?"

UPSERT = """
INSERT INTO {ks}.user_sessions
  (site_id, user_key, session_id, started_at, last_seen_at, anonymous_id, user_id,
   event_count, pageview_count, click_count, entry_url, exit_url, converted, is_bot,
   ip_prefix, <dimensions>)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, <dimension markers>)
USING TIMESTAMP ? AND TTL ?
"""


def upsert_params(
    *,
    site_id: uuid.UUID,
    user_key: str,
    session_id: uuid.UUID,
    started_at: datetime,
    last_seen_at: datetime,
    anonymous_id: str | None,
    user_id: str | None,
    event_count: int,
    pageview_count: int,
    click_count: int,
    entry_url: str | None,
    exit_url: str | None,
    converted: bool,
    is_bot: bool,
    ip_prefix: str | None,
    dimensions: Mapping[str, str | None],
    timestamp: int,
    ttl: int,
) -> tuple[Any, ...]:
    """Return UPSERT's parameters in its order (`dimensions` by name, in the columns'
    order: `columns_of`; one the mapping lacks is null)."""
    return (
        site_id,
        user_key,
        session_id,
        started_at,
        last_seen_at,
        anonymous_id,
        user_id,
        event_count,
        pageview_count,
        click_count,
        entry_url,
        exit_url,
        converted,
        is_bot,
        ip_prefix,
        *(dimensions.get(d.name) for d in enriched()),
        timestamp,
        ttl,
    )


SELECT_BEFORE = """
SELECT session_id, started_at, last_seen_at, anonymous_id, user_id, event_count,
       pageview_count, click_count, entry_url, exit_url, converted, is_bot,
       <dimensions>
FROM {ks}.user_sessions WHERE site_id = ? AND user_key = ? AND session_id < ? LIMIT ?
"""

SELECT_ANY = "SELECT site_id FROM {ks}.user_sessions LIMIT 1"
POLICIES = (retention_specs.SESSIONS,)


class UserSession(Model):
    """One row per session in the partition of (site, user key), newest first."""

    __table_name__ = "user_sessions"
    __options__ = table_options(policies=POLICIES)

    site_id = columns.UUID(partition_key=True)
    user_key = columns.Text(partition_key=True)
    session_id = columns.TimeUUID(primary_key=True, clustering_order="DESC")
    started_at = columns.DateTime(required=True)
    last_seen_at = columns.DateTime(required=True)
    anonymous_id = columns.Text()
    user_id = columns.Text()
    event_count = columns.Integer(default=0)
    pageview_count = columns.Integer(default=0)
    click_count = columns.Integer(default=0)
    entry_url = columns.Text()
    exit_url = columns.Text()
    converted = columns.Boolean(default=False)
    is_bot = columns.Boolean(default=False)
    user_agent = columns.Text()  # no longer written (derived fields below); older rows have it
    ip_prefix = columns.Text()
    # One text column per enrichment dimension (foundation/dimensions.py). In a class body
    # locals() is the namespace itself (PEP 667 makes it the language's rule), which
    # cqlengine's metaclass reads the columns from.
    locals().update({name: columns.Text() for name in columns_of()})


SPEC = TableSpec(
    policies=POLICIES,
    model=UserSession,
    purge=None,
    erasure="_delete_sessions",
    sizing=None,
)
