"""A user's sessions, newest first, across the user and its linked ids; identity links."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sessions_app.core.bounds import RangeError, bounded_limit, checked_time_uuid
from sessions_app.core.cql import cassandra_session, prepare
from sessions_app.core.ids import time_uuid_bound
from sessions_app.tables.user_sessions import session_row

SELECT_LINKS = """
SELECT anonymous_id, linked_at FROM {ks}.identity_links WHERE site_id = ? AND user_id = ? LIMIT ?
"""


def identity_links(*, site_id: uuid.UUID, user_id: str, limit: int = 100) -> list[str]:
    """Return the anonymous ids identify() linked to a user id."""
    rows = cassandra_session().execute(
        prepare(SELECT_LINKS), (site_id, user_id, bounded_limit(limit))
    )
    return [row["anonymous_id"] for row in rows]


SELECT_SESSIONS_BEFORE = """
SELECT session_id, started_at, last_seen_at, anonymous_id, user_id, event_count,
       pageview_count, click_count, entry_url, exit_url, converted, is_bot
FROM {ks}.user_sessions WHERE site_id = ? AND user_key = ? AND session_id < ? LIMIT ?
"""


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
    statement = prepare(SELECT_SESSIONS_BEFORE)
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
