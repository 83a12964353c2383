"""Series keys and point reads/writes for aggregates (base + delta keys, see SeriesPoint)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.timebuckets import EPOCH, as_utc
from sessions_app.foundation.tables import series_points

SERIES_PERIOD_MS = 2**32  # 4,294,967,296 ms, about 49.7 days per row


def to_millis(ts: datetime) -> int:
    """Return milliseconds since the epoch of a UTC-aware datetime (exact)."""
    delta = as_utc(ts) - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def series_base(ts_ms: int) -> int:
    """Return the base timestamp of the series row holding ts_ms: ts - ts mod 2^32."""
    return ts_ms - ts_ms % SERIES_PERIOD_MS


def series_bases(start_ms: int, end_ms: int) -> list[int]:
    """Return the base timestamps of every series row overlapping [start_ms, end_ms)."""
    if end_ms <= start_ms:
        return []
    return list(range(series_base(start_ms), end_ms, SERIES_PERIOD_MS))


def series_key(metric: str, tags: dict[str, str]) -> str:
    """Return "metric,tag1=v1,tag2=v2" with the tags sorted by name (base + delta series keys)."""
    for text in (metric, *tags, *tags.values()):
        if any(c in text for c in ",="):
            raise ValueError(f"series names and tags cannot contain ',' or '=': {text!r}")
    return ",".join([metric, *(f"{k}={tags[k]}" for k in sorted(tags))])


def point_location(ts: datetime) -> tuple[int, int]:
    """Return (base, delta) of a point at ts."""
    ms = to_millis(ts)
    base = series_base(ms)
    return base, ms - base


def points_write(points: list[tuple[str, datetime, float]], *, ttl: int) -> None:
    """Overwrite (series key, ts, value) points kept `ttl` seconds; rewriting one is idempotent."""
    statement = prepare(series_points.INSERT, idempotent=True, write=True)
    futures = []
    for key, ts, value in points:
        base, delta = point_location(ts)
        futures.append(
            cassandra_session().execute_async(statement, (key, base, delta, float(value), ttl))
        )
    for future in futures:
        future.result()


def points_read(key: str, start: datetime, end: datetime) -> list[tuple[datetime, float]]:
    """Return the points of a series in [start, end), across base periods, in time order."""
    start_ms, end_ms = to_millis(start), to_millis(end)
    statement = prepare(series_points.SELECT_RANGE)
    futures: list[tuple[int, Any]] = []
    for base in series_bases(start_ms, end_ms):
        low = max(start_ms - base, 0)
        high = min(end_ms - base, SERIES_PERIOD_MS)
        futures.append((base, cassandra_session().execute_async(statement, (key, base, low, high))))
    points = []
    for base, future in futures:
        for row in future.result():
            points.append(
                (timebuckets.EPOCH + timedelta(milliseconds=base + row["delta"]), row["value"])
            )
    return points
