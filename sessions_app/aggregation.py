"""Pure aggregate computation for one bucket of a site's events (no I/O).

Given the bucket's raw events (all shards) and the summaries of the sessions that
started in it, return the numbers a dashboard shows. Bots are excluded.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sessions_app.ids import uuid_time

DURATION_BINS = [
    ("0-10s", timedelta(seconds=10)),
    ("10-60s", timedelta(minutes=1)),
    ("1-3m", timedelta(minutes=3)),
    ("3-10m", timedelta(minutes=10)),
    ("10-30m", timedelta(minutes=30)),
    ("30m+", timedelta.max),
]
TOP_N = 20


@dataclass
class Aggregates:
    events: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    by_name: dict[str, int] = field(default_factory=dict)
    sessions_started: int = 0
    users: int = 0
    bounces: int = 0
    conversions: int = 0
    durations: dict[str, int] = field(default_factory=dict)
    top_pages: list[tuple[str, int]] = field(default_factory=list)
    top_clicks: list[tuple[str, int]] = field(default_factory=list)
    rows_read: int = 0


def duration_bin(duration: timedelta) -> str:
    """Return the histogram bin of a session duration."""
    for name, upper in DURATION_BINS:
        if duration < upper:
            return name
    return DURATION_BINS[-1][0]


def page_path(url: str | None) -> str | None:
    if not url:
        return None
    rest = url.split("://", 1)[-1]
    path = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
    return path.split("?", 1)[0].split("#", 1)[0]


def click_label(element: dict[str, Any] | None) -> str | None:
    """Return how a clicked element is counted: its selector, else its text, else its tag."""
    if not element:
        return None
    return element.get("selector") or element.get("text") or element.get("tag")


def aggregate_bucket(
    events: Iterable[dict[str, Any]],
    *,
    start: datetime,
    end: datetime,
    sessions: dict[uuid.UUID, dict[str, Any]],
    conversion_event: str,
) -> Aggregates:
    """Aggregate one bucket [start, end) from its raw events and its sessions' summaries.

    `sessions` maps session ids started in the bucket to their user_sessions rows
    (for bounces and durations: a session's whole span, not just this bucket).
    """
    result = Aggregates()
    by_type: Counter[str] = Counter()
    by_name: Counter[str] = Counter()
    pages: Counter[str] = Counter()
    clicks: Counter[str] = Counter()
    users: set[str] = set()
    for event in events:
        result.rows_read += 1
        if event.get("is_bot"):
            continue
        result.events += 1
        by_type[event["type"]] += 1
        users.add(event["user_key"])
        if event["type"] == "custom" and event.get("name"):
            by_name[event["name"]] += 1
            if event["name"] == conversion_event:
                result.conversions += 1
        elif event["type"] == "pageview":
            path = page_path(event.get("url"))
            if path:
                pages[path] += 1
        elif event["type"] == "click":
            label = click_label(event.get("element"))
            if label:
                clicks[label] += 1
    durations: Counter[str] = Counter()
    for session_id, summary in sessions.items():
        if summary.get("is_bot") or not start <= uuid_time(session_id) < end:
            continue
        result.sessions_started += 1
        if (summary.get("pageview_count") or 0) <= 1 and (summary.get("event_count") or 0) <= 1:
            result.bounces += 1
        durations[duration_bin(summary["last_seen_at"] - summary["started_at"])] += 1
    result.by_type, result.by_name = dict(by_type), dict(by_name)
    result.users = len(users)
    result.durations = dict(durations)
    result.top_pages = pages.most_common(TOP_N)
    result.top_clicks = clicks.most_common(TOP_N)
    return result
