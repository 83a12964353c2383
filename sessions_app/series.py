"""Series keys and point reads/writes for aggregates (seed 004 layout, see SeriesPoint)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sessions_app import buckets
from sessions_app.cassandra import prepare, session

INSERT_POINT = """
INSERT INTO {ks}.series_points (series_key, base, delta, value) VALUES (?, ?, ?, ?) USING TTL ?
"""
SELECT_POINTS = """
SELECT delta, value FROM {ks}.series_points
WHERE series_key = ? AND base = ? AND delta >= ? AND delta < ?
"""


def series_key(metric: str, tags: dict[str, str]) -> str:
    """Return "metric,tag1=v1,tag2=v2" with the tags sorted by name (seed 004)."""
    for text in (metric, *tags, *tags.values()):
        if any(c in text for c in ",="):
            raise ValueError(f"series names and tags cannot contain ',' or '=': {text!r}")
    return ",".join([metric, *(f"{k}={tags[k]}" for k in sorted(tags))])


def point_location(ts: datetime) -> tuple[int, int]:
    """Return (base, delta) of a point at ts."""
    ms = buckets.to_millis(ts)
    base = buckets.series_base(ms)
    return base, ms - base


def points_write(points: list[tuple[str, datetime, float]], *, ttl: int) -> None:
    """Overwrite (series key, ts, value) points kept `ttl` seconds; rewriting one is idempotent."""
    statement = prepare(INSERT_POINT, idempotent=True, write=True)
    futures = []
    for key, ts, value in points:
        base, delta = point_location(ts)
        futures.append(session().execute_async(statement, (key, base, delta, float(value), ttl)))
    for future in futures:
        future.result()


def points_read(key: str, start: datetime, end: datetime) -> list[tuple[datetime, float]]:
    """Return the points of a series in [start, end), across base periods, in time order."""
    start_ms, end_ms = buckets.to_millis(start), buckets.to_millis(end)
    statement = prepare(SELECT_POINTS)
    futures: list[tuple[int, Any]] = []
    for base in buckets.series_bases(start_ms, end_ms):
        low = max(start_ms - base, 0)
        high = min(end_ms - base, buckets.SERIES_PERIOD_MS)
        futures.append((base, session().execute_async(statement, (key, base, low, high))))
    points = []
    for base, future in futures:
        for row in future.result():
            points.append(
                (buckets.EPOCH + timedelta(milliseconds=base + row["delta"]), row["value"])
            )
    return points
