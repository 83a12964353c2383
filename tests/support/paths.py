"""Paths' brute force: visits sent through /collect, the raw rows of a range, and every
path of up to five pages ending at each human page view, counted from those rows."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime
from typing import Any

from sessions_app.domain.aggregates import sources
from sessions_app.domain.aggregates.path_grams import ENTRANCE, MAX_STEPS
from sessions_app.domain.aggregates.paths import FROM
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.ids import cassandra_order
from sessions_app.foundation.core.pagepaths import page_path
from sessions_app.foundation.tables import user_sessions
from tests.support.events import post

BOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


def send(client, site, events: list[dict[str, Any]], agent: str) -> None:
    response = post(client, site, events, HTTP_USER_AGENT=agent, REMOTE_ADDR="8.8.8.8")
    assert response.status_code == 200, response.content
    assert response.json()["accepted"] == len(events), response.json()


def raw_rows(site, start: datetime, end: datetime) -> list[dict[str, Any]]:
    rows = []
    for hour in timebuckets.buckets_between(start, end, "hour"):
        rows.extend(sources.site_bucket_rows(site_id=site.id, hour=hour, shards=4))
    return rows


def brute(rows, site, start: datetime, end: datetime, *, since: datetime | None = None):
    """Every path (ENTRANCE first when it starts the session) ending at a human page
    view in [start, end) (and, given `since`, whose first page view is not before it),
    entrances by (page, the session's source), and each session's page sequence."""
    views: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["type"] == "pageview" and not row["is_bot"]:
            views[row["session_id"]].append(row)
    summaries = {
        sid: user_sessions.session_summary(
            site_id=site.id, user_key=v[0]["user_key"], session_id=sid
        )
        for sid, v in views.items()
    }
    grams: Counter = Counter()
    entrances: Counter = Counter()
    sequences = {}
    for sid, seen in views.items():
        seen.sort(key=lambda r: cassandra_order(r["event_id"]))
        pages = [page_path(r["url"]) for r in seen]
        sequences[sid] = pages
        for j, row in enumerate(seen):
            if not start <= timebuckets.from_driver(row["ts"]) < end:
                continue
            seq = [ENTRANCE, *pages[: j + 1]]
            if j == 0:
                entrances[pages[0], summaries[sid]["source"] or "(none)"] += 1
            for k in range(1, len(seq) + 1):
                gram = tuple(seq[-k:])
                if len([p for p in gram if p != ENTRANCE]) > MAX_STEPS:
                    break
                first = seen[max(0, j + 1 - k)]["ts"]
                if since is None or timebuckets.from_driver(first) >= since:
                    grams[gram] += 1
    return grams, entrances, sequences


def anchored(grams: Counter, side: str, anchor: str) -> dict:
    if side == FROM:
        return {g: n for g, n in grams.items() if g[0] == anchor}
    return {g: n for g, n in grams.items() if len(g) > 1 and g[-1] == anchor}
