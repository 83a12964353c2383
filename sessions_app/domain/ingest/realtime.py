"""Realtime: who is on a site now, kept in Redis per minute, never scanned from Cassandra.

Per site and minute of receipt: a HyperLogLog of the visitors whose events happened in
the last REALTIME_WINDOW (`cs:rt:<site>:<minute>:v`), and a sorted set of the page paths
they viewed, by page views (`…:p`). The collector adds to both in the same Redis round
trip that finishes the request (coordination.finish). A read merges the last five
minutes: PFCOUNT of the HyperLogLogs (±0.8 %; exact below a few hundred), and the top
TOP_PAGES of each minute's set summed. Keys expire after KEY_TTL; a minute's set keeps
its MAX_PATHS most viewed paths, so memory stays bounded whatever the URLs.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.pagepaths import page_path
from sessions_app.foundation.core.redis_client import redis_client

WINDOW = timedelta(minutes=5)
KEY_TTL = 10 * 60  # seconds
TOP_PAGES = 100
MAX_PATHS = 1_000  # paths kept per site and minute (the least viewed beyond it dropped)


def minute_keys(site_id: uuid.UUID, minute: datetime) -> tuple[str, str]:
    stamp = timebuckets.epoch_minute(minute)
    return f"cs:rt:{site_id}:{stamp}:v", f"cs:rt:{site_id}:{stamp}:p"


@dataclass(frozen=True)
class Marks:
    """What one request adds: its current visitors and the paths they viewed."""

    visitors: list[str]
    pages: list[str]


def marks(events: Iterable[tuple[str, str, str | None, datetime]], *, now: datetime) -> Marks:
    """(user key, type, url, ts) of accepted events → the visitors seen in the window and
    their page views' paths (events from before the window are history, not presence)."""
    since = now - WINDOW
    visitors: set[str] = set()
    pages: list[str] = []
    for user_key, kind, url, ts in events:
        if ts < since:
            continue
        visitors.add(user_key)
        path = page_path(url) if kind == "pageview" else None
        if path:
            pages.append(path[:512])
    return Marks(sorted(visitors), pages)


def of_candidates(candidates: Iterable[Any], *, now: datetime) -> Marks:
    """The marks of a request's accepted events (ingest/order.Candidate)."""
    return marks(((c.user_key, c.event.type, c.event.url, c.ts) for c in candidates), now=now)


@dataclass(frozen=True)
class Now:
    visitors: int
    pages: list[tuple[str, int]]
    minutes: int


def realtime_now(*, site_id: uuid.UUID, now: datetime, top: int = 10) -> Now:
    """Visitors of the last five minutes and the pages they viewed most."""
    minutes = [now - timedelta(minutes=m) for m in range(int(WINDOW.total_seconds() // 60))]
    keys = [minute_keys(site_id, m) for m in minutes]
    client = redis_client()
    with client.pipeline(transaction=False) as pipe:
        pipe.pfcount(*[v for v, _ in keys])
        for _, p in keys:
            pipe.zrevrange(p, 0, TOP_PAGES - 1, withscores=True)
        visitors, *ranked = pipe.execute()
    views: Counter[str] = Counter()
    for rows in ranked:
        for path, score in rows:
            views[path.decode() if isinstance(path, bytes) else path] += int(score)
    return Now(int(visitors), views.most_common(max(1, min(top, 50))), len(minutes))
