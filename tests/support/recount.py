"""A sealed hour against a brute-force recount of its raw rows: the check every fault test
ends with (tests/faults, tests/aggregates/test_exact_after_faults.py).

The recount reads site_events_by_bucket itself (every shard the hour was written with) and
counts with plain Counters, sharing nothing with the seal but the path and label
normalisers (pagepaths.page_path, labels.click_name).
"""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import orjson

from sessions_app.domain.aggregates import labels, seal, stored, totals
from sessions_app.foundation.core import pagepaths, timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.ids import uuid_time
from sessions_app.foundation.models import BucketState
from tests.support.sealing import bucket_aggregate

RAW_ROWS = (
    "SELECT session_id, user_key, type, name, url, element, is_bot "
    "FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ?"
)
ROLLING = (
    "SELECT count, counts FROM {ks}.rolling_counts WHERE site_id = ? AND user_key = ? "
    "AND granularity = ? AND period = ? AND event_key = '' AND bucket = ?"
)


def _started_in(session_id: uuid.UUID, hour: datetime) -> bool:
    return hour <= uuid_time(session_id) < hour + timedelta(hours=1)


def recount(site: Any, hour: datetime) -> dict[str, Any]:
    """The hour's aggregates counted from its raw rows, one row at a time."""
    shards = BucketState.objects.get(site=site, granularity="hour", bucket=hour).shards
    statement = prepare(RAW_ROWS)
    rows = [
        r for s in range(shards) for r in cassandra_session().execute(statement, (site.id, hour, s))
    ]
    human = [r for r in rows if not r["is_bot"]]
    pages: Counter[str] = Counter()
    clicks: Counter[str] = Counter()
    for r in human:
        if r["type"] == "pageview" and pagepaths.page_path(r["url"]):
            pages[pagepaths.page_path(r["url"])] += 1  # type: ignore[index]
        if r["type"] == "click":
            label = labels.click_name(orjson.loads(r["element"]) if r["element"] else None)
            if label:
                clicks[label] += 1
    return {
        "events": len(human),
        "by_type": dict(Counter(r["type"] for r in human)),
        "users": len({r["user_key"] for r in human}),
        "sessions": len({r["session_id"] for r in human if _started_in(r["session_id"], hour)}),
        "pages": dict(pages),
        "clicks": dict(clicks),
        # a user's own counts include bots' events (rolling counters count everything)
        "user_counts": users_of(rows),
    }


def users_of(rows: list[Any]) -> dict[str, dict[str, int]]:
    """{user: {event key: events}} of raw rows, one row at a time (bots too)."""
    found: dict[str, dict[str, int]] = {}
    for r in rows:
        keys = found.setdefault(r["user_key"], {})
        key = r["name"] if r["type"] == "custom" else r["type"]
        keys[key] = keys.get(key, 0) + 1
    return found


def sealed(site: Any, hour: datetime) -> dict[str, Any]:
    """The same figures as the seal stored them: bucket_aggregates, bucket_users and the
    users' rolling_counts rows of the hour."""
    found = bucket_aggregate(site_id=site.id, granularity="hour", bucket=hour)
    assert found is not None, f"hour {hour} was never sealed"
    user_counts = stored.bucket_user_counts(
        site_id=site.id, granularity="hour", bucket_starts=[hour]
    )
    period = timebuckets.rolling_period("hour", hour)
    rolling = prepare(ROLLING)
    for user, counts in user_counts.items():  # one row a user: its keys' map and their total
        row = cassandra_session().execute(rolling, (site.id, user, "hour", period, hour)).one()
        assert row is not None and dict(row["counts"]) == counts, (user, counts, row)
        assert row["count"] == sum(counts.values()), (user, row)
    assert len(found["top_pages"]) <= totals.TOP_N and len(found["top_clicks"]) <= totals.TOP_N
    return {
        "events": found["events"],
        "by_type": found["by_type"],
        "users": found["users"],
        "sessions": found["sessions_started"],
        "pages": dict(found["top_pages"]),
        "clicks": dict(found["top_clicks"]),
        "user_counts": user_counts,
    }


def _top(counts: dict[str, int]) -> dict[str, int]:
    """What a top-N list of these counts must hold (ties at the cut: any of them)."""
    return dict(Counter(counts).most_common(totals.TOP_N))


def assert_exact(site: Any, hour: datetime, *, raw_rows_only: bool = False) -> int:
    """Assert the hour's stored aggregates equal the recount; return its human events.

    raw_rows_only: the test wrote site_events_by_bucket rows alone (no session summaries,
    which the seal reads for sessions that may go on past the hour): sessions not compared.
    """
    brute, got = recount(site, hour), sealed(site, hour)
    if raw_rows_only:
        del brute["sessions"], got["sessions"]
    if len(brute["pages"]) <= totals.TOP_N and len(brute["clicks"]) <= totals.TOP_N:
        assert got == brute, (hour, {k: (got[k], brute[k]) for k in got if got[k] != brute[k]})
    else:  # only ties at the top-N cut may differ
        rest = ("pages", "clicks")
        assert {k: v for k, v in got.items() if k not in rest} == {
            k: v for k, v in brute.items() if k not in rest
        }
        for key in rest:
            assert all(brute[key][p] == n for p, n in got[key].items()), key
            assert sorted(got[key].values()) == sorted(_top(brute[key]).values()), key
    return int(brute["events"])


def seal_and_compare(
    site: Any, hours: set[datetime], *, expected_events: int | None = None
) -> None:
    """Seal each hour (as the sweep would, once it is due) and assert its stored aggregates
    equal the recount; with expected_events, that the hours hold that many human events."""
    total = 0
    for hour in sorted(hours):
        assert seal.bucket_seal(site_id=site.id, hour=hour, now=hour + timedelta(hours=2))
        total += assert_exact(site, hour)
    if expected_events is not None:
        assert total == expected_events


def hours_of(events: list[dict[str, Any]]) -> set[datetime]:
    """The hours a list of beacon events falls into."""
    return {
        timebuckets.floor(timebuckets.as_utc(datetime.fromisoformat(e["ts"])), "hour")
        for e in events
    }
