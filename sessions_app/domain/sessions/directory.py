"""The users directory: a site's recent users and a search by the prefix of a user id, an
anonymous id or an email trait (foundation/tables/user_directory.py), each user described by its
newest session (last seen, country, device) and its number of sessions.

Bounded: a search reads one slice of one partition (LIMIT), recent users the feed's
sentinels; describing a page of users is one single-partition read a user (the newest
session first, the others counted up to SESSIONS_CAP), run concurrently.
"""

from __future__ import annotations

import uuid
from typing import Any

from sessions_app.domain.sessions.feed import feed_latest
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.tables import user_directory, user_sessions

PAGE = 50  # users a page lists
SESSIONS_CAP = 100  # sessions counted a user ("100+" beyond)
MAX_QUERY = 256
TERMS_A_USER = 3  # a user's terms a prefix may match: user id, anonymous id, email
MATCHED_BY = {
    user_directory.USER_ID: "user id",
    user_directory.ANONYMOUS_ID: "anonymous id",
    user_directory.EMAIL: "email",
}


def directory_search(*, site_id: uuid.UUID, query: str, limit: int = PAGE) -> list[dict[str, Any]]:
    """Users whose user id, anonymous id or email trait starts with the query (case
    insensitive), in the order of the matching terms; each with what matched."""
    return users_describe(
        site_id=site_id, matches=directory_match(site_id=site_id, query=query, limit=limit)
    )


def directory_match(
    *, site_id: uuid.UUID, query: str, limit: int = PAGE
) -> dict[str, dict[str, Any]]:
    """The user keys a prefix finds, in term order, each with the term that matched and
    what it is: one slice of one user_directory partition."""
    if len(query) > MAX_QUERY:
        raise RangeError("q", f"at most {MAX_QUERY} characters")
    bounds = user_directory.search_bounds(query)
    if bounds is None:
        return {}
    limit = max(1, min(limit, PAGE))
    rows = cassandra_session().execute(
        prepare(user_directory.SEARCH), (site_id, *bounds, limit * TERMS_A_USER)
    )
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["user_key"] not in found and len(found) < limit:
            found[row["user_key"]] = {
                # the term that matched, unless it is the key itself (lowercased)
                "matched": row["term"] if row["term"] != row["user_key"].lower() else None,
                "matched_by": MATCHED_BY.get(row["kind"]),
            }
    return found


def recent_users(*, site_id: uuid.UUID, limit: int = PAGE) -> list[dict[str, Any]]:
    """The users of the latest sessions, identified ones first, each newest first."""
    limit = max(1, min(limit, PAGE))
    keys: dict[str, dict[str, Any]] = {}
    # The feed has a row per batch and session: the newest 2 x `limit` sessions' rows
    # first, twice as many again only when they were fewer than `limit` users.
    for sessions in (limit * 2, limit * 4):
        keys = {}
        for entry in feed_latest(site_id=site_id, limit=sessions):
            if len(keys) < limit:
                keys.setdefault(entry["user_key"], {})
        if len(keys) >= limit:
            break
    users = users_describe(site_id=site_id, matches=keys)
    return sorted(users, key=lambda u: not u["identified"])  # stable: newest first within


def users_describe(
    *, site_id: uuid.UUID, matches: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each user key with its newest session's last seen, country and device, and its
    number of sessions (at most SESSIONS_CAP, `more` beyond); users without a session left
    (expired or erased) are left out."""
    describe = prepare(user_sessions.with_dimensions(user_sessions.SELECT_DESCRIBE))
    session = cassandra_session()
    futures = [
        (key, session.execute_async(describe, (site_id, key, SESSIONS_CAP + 1))) for key in matches
    ]
    users = []
    for key, future in futures:
        rows = list(future.result())
        count = len(rows)
        if not rows:
            continue
        latest = rows[0]
        users.append(
            {
                "user_key": key,
                **matches[key],
                "identified": latest["user_id"] is not None,
                "last_seen_at": timebuckets.from_driver(latest["last_seen_at"]),
                "sessions": min(count, SESSIONS_CAP),
                "more": count > SESSIONS_CAP,
                "country": latest.get("country"),
                "device": latest.get("device"),
                "browser": latest.get("browser"),
            }
        )
    return users
