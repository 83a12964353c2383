"""A user's sessions, newest first, across the user and its linked ids; identity links;
the user's properties."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from sessions_app.foundation.core.bounds import RangeError, bounded_limit, checked_time_uuid
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.ids import time_uuid_bound
from sessions_app.foundation.tables import identity_links as identity_links_table
from sessions_app.foundation.tables import user_properties as user_properties_table
from sessions_app.foundation.tables import user_sessions
from sessions_app.foundation.tables.user_sessions import session_row


def identity_links(*, site_id: uuid.UUID, user_id: str, limit: int = 100) -> list[str]:
    """Return the anonymous ids identify() linked to a user id."""
    rows = cassandra_session().execute(
        prepare(identity_links_table.SELECT_LINKED), (site_id, user_id, bounded_limit(limit))
    )
    return [row["anonymous_id"] for row in rows]


MAX_PROPERTIES = 500


def user_properties(*, site_id: uuid.UUID, user_key: str) -> list[dict[str, Any]]:
    """Return a user's properties by name: the latest value (decoded JSON) of each trait,
    with when it was first and last set (at most MAX_PROPERTIES)."""
    rows = cassandra_session().execute(
        prepare(user_properties_table.SELECT), (site_id, user_key, MAX_PROPERTIES)
    )
    return [
        {
            "name": row["name"],
            "value": None if row["value"] is None else orjson.loads(row["value"]),
            "first_set_at": _utc(row["first_set_at"]),
            "last_set_at": _utc(row["last_set_at"]),
        }
        for row in rows
        if row["last_set_at"] is not None  # a first_set_at alone: its value expired
    ]


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.replace(tzinfo=UTC)


@dataclass(frozen=True)
class SessionPage:
    sessions: list[dict[str, Any]]
    next_cursor: uuid.UUID | None


def sessions_page(
    *,
    site_id: uuid.UUID,
    user_keys: list[str],
    limit: int = 20,
    before: uuid.UUID | None = None,
) -> SessionPage:
    """Return sessions of several user keys (a user and its linked anonymous ids), newest first.

    The cursor is the last session id shown; each key's partition is read from
    just below it, in parallel, and the results merged by session start.
    """
    limit = bounded_limit(limit)
    before = checked_time_uuid(before, "cursor")
    if not 1 <= len(user_keys) <= 20:
        raise RangeError("user_keys", "between 1 and 20 keys")
    upper = before or time_uuid_bound(datetime.now(UTC) + timedelta(days=2), upper=True)
    statement = prepare(user_sessions.with_dimensions(user_sessions.SELECT_BEFORE))
    futures = [
        (k, cassandra_session().execute_async(statement, (site_id, k, upper, limit + 1)))
        for k in user_keys
    ]
    merged: list[dict[str, Any]] = []
    for user_key, future in futures:
        merged.extend({**session_row(row), "user_key": user_key} for row in future.result())
    merged.sort(key=lambda s: s["session_id"].time, reverse=True)
    page = merged[:limit]
    return SessionPage(page, page[-1]["session_id"] if len(merged) > limit else None)
