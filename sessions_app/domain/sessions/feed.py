"""The latest sessions of a site from the non-time sentinel feed."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings

from sessions_app.foundation.core.bounds import bounded_limit
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.tables import latest_sessions
from sessions_app.foundation.tables.user_sessions import session_row


def feed_latest(*, site_id: uuid.UUID, limit: int = 20) -> list[dict[str, Any]]:
    """Return the site's most recently active sessions (one entry per session), newest first."""
    limit = bounded_limit(limit)
    statement = prepare(latest_sessions.SELECT_LATEST)
    futures = [
        cassandra_session().execute_async(statement, (site_id, sentinel, limit * 3))
        for sentinel in range(settings.FEED_SHARDS)
    ]
    # The driver's times compare as they come (naive UTC); only the entries returned are
    # converted (up to 3 x FEED_SHARDS x limit rows are read).
    latest: dict[uuid.UUID, dict[str, Any]] = {}
    for future in futures:
        for row in future.result():
            known = latest.get(row["session_id"])
            if known is None or known["last_seen_at"] < row["last_seen_at"]:
                latest[row["session_id"]] = row
    ordered = sorted(latest.values(), key=lambda e: e["last_seen_at"], reverse=True)
    return [session_row(row) for row in ordered[:limit]]
