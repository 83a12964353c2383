"""What the funnel builder suggests for a step's text field: the paths, selectors and event
names of the site's recent events, the most frequent first, per step kind (each kind says
what it takes from an event row: kinds.StepKind.suggestion).

Bounded: the site's latest RECENT_HOURS hours that had events (BucketState), at most
ROWS_A_PARTITION rows of each of their shards and MAX_ROWS in all; cached CACHE_SECONDS.
"""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import datetime
from typing import Any

from django.core.cache import cache

from sessions_app.domain.goals.kinds import STEP_KINDS
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.models import BucketState
from sessions_app.foundation.tables import site_events_by_bucket

RECENT_HOURS = 24
ROWS_A_PARTITION = 500
MAX_ROWS = 5000
MAX_SUGGESTIONS = 40  # a kind's
CACHE_SECONDS = 60


def recent_rows(site_id: uuid.UUID, now: datetime) -> list[dict[str, Any]]:
    """The site's newest event rows: its latest hours with events, newest first."""
    hours = (
        BucketState.objects.filter(site_id=site_id, granularity="hour", bucket__lte=now)
        .order_by("-bucket")
        .values_list("bucket", "shards")[:RECENT_HOURS]
    )
    statement = prepare(site_events_by_bucket.SAMPLE)
    rows: list[dict[str, Any]] = []
    for bucket, shards in hours:
        futures = [
            cassandra_session().execute_async(
                statement, (site_id, timebuckets.as_utc(bucket), shard, ROWS_A_PARTITION)
            )
            for shard in range(max(1, shards))
        ]
        for future in futures:
            rows.extend(future.result())
        if len(rows) >= MAX_ROWS:
            break
    return rows[:MAX_ROWS]


def step_suggestions(site_id: uuid.UUID, now: datetime) -> dict[str, list[str]]:
    """Each step kind's suggestions (by kind name), the most frequent first."""
    key = f"funnel-suggestions:{site_id}"
    found = cache.get(key)
    if found is None:
        rows = [r for r in recent_rows(site_id, now) if not r.get("is_bot")]
        found = {}
        for kind in STEP_KINDS:
            counted = Counter(v for v in map(kind.suggestion, rows) if v)
            found[kind.name] = [v for v, _ in counted.most_common(MAX_SUGGESTIONS)]
        cache.set(key, found, CACHE_SECONDS)
    return found
