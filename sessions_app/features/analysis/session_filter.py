"""The dashboard's numbers for filters the sealed breakdowns do not answer, counted from
the site_sessions rows of the sessions that match (features/analysis/dashboard.py dispatches).

Each (site, UTC day, shard) partition of a period is read once with the filters'
clauses on its indexed columns (foundation/tables/site_sessions.py, as the explorer reads it), so
only matching rows leave Cassandra. A period reads at most MAX_PARTITIONS partitions,
newest day first: past that the answer is the latest days' and says so (`Counted.cut`).
A session counts in the period it started in, with what its row says now: its visitor,
page views, duration and conversion (bots left out unless the `bot` filter asks for them).
"""

from __future__ import annotations

import statistics
import uuid
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from django.conf import settings

from sessions_app.domain.aggregates.breakdowns import NONE, OTHER, names
from sessions_app.domain.aggregates.kpis import CHARTED, Kpis
from sessions_app.features.analysis import explorer
from sessions_app.features.web.periods import Period
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.ids import time_uuid_bound
from sessions_app.foundation.tables import site_sessions
from sessions_app.foundation.tables.site_sessions import filtered_params, still_matching

MAX_PARTITIONS = 64  # per period: 32 days of SESSION_SHARDS=2 (a 30-day period fits)
MAX_ROWS = 100_000  # matching sessions read from one partition (driver-paged)


def kpis_count(rows: list[dict[str, Any]]) -> Kpis:
    """The KPIs of these sessions (site_sessions rows); the median is the lower one, as
    the sealed sketches answer it (kpis.slots_median)."""
    durations = [r["duration_s"] or 0 for r in rows]
    return Kpis(
        visitors=len({r["user_key"] for r in rows}),
        visits=len(rows),
        pageviews=sum(r["pageview_count"] or 0 for r in rows),
        bounces=sum(1 for r in rows if (r["pageview_count"] or 0) <= 1),
        duration_seconds_sum=float(sum(durations)),
        duration_median=float(statistics.median_low(durations)) if durations else None,
        conversions=sum(1 for r in rows if r["converted"]),
        converting_visitors=len({r["user_key"] for r in rows if r["converted"]}),
    )


@dataclass(frozen=True)
class Counted:
    """The matching sessions of [start, end) and what was read to find them: `since` is
    where counting began (`start`, or a later UTC midnight when the budget cut)."""

    rows: list[dict[str, Any]]
    since: datetime
    days_read: int
    days_total: int
    partitions_read: int
    capped: bool = False  # a partition had more than MAX_ROWS matching sessions

    @property
    def cut(self) -> bool:
        return self.capped or self.days_read < self.days_total


def sessions_counting(
    *,
    site_id: uuid.UUID,
    start: datetime,
    end: datetime,
    filters: dict[str, Any],
    kpis_only: bool = False,
) -> Callable[[], Counted]:
    """Send the reads of the sessions that started in [start, end) and match every filter
    (typed values, as explorer.ExplorerQuery holds them), newest days first within
    MAX_PARTITIONS; the returned call waits for them (a period and its comparison are
    both sent before either waits). With `kpis_only` the rows hold only what
    `kpis_count` and the chart count (site_sessions.select_filtered)."""
    if end <= start:
        return lambda: Counted([], start, 0, 0, 0)
    names = tuple(sorted(filters))
    statement = prepare(site_sessions.select_filtered(names, kpis_only=kpis_only))
    values = explorer.filter_values(site_id, filters, names)
    shards = max(1, settings.SESSION_SHARDS)
    days = timebuckets.buckets_between(
        timebuckets.floor(start, "day"), timebuckets.ceil(end, "day"), "day"
    )[::-1]
    chosen = days[: max(1, MAX_PARTITIONS // shards)]
    futures: list[Any] = []
    for day in chosen:
        low = time_uuid_bound(max(start, day))
        high = time_uuid_bound(min(end, timebuckets.next_start(day, "day")))
        futures.extend(
            cassandra_session().execute_async(
                statement,
                filtered_params((site_id, day, shard), low, high, names, values, MAX_ROWS),
            )
            for shard in range(shards)
        )
    since = start if len(chosen) == len(days) else max(start, chosen[-1])

    def counted() -> Counted:
        rows: list[dict[str, Any]] = []
        capped = False
        for future in futures:
            found = list(future.result())
            capped = capped or len(found) >= MAX_ROWS
            found = still_matching(found, names, values)
            for row in found:  # the only time counted (session_row would convert two, a copy)
                row["started_at"] = timebuckets.from_driver(row["started_at"])
            rows.extend(found)
        if "bot" not in filters:
            rows = [r for r in rows if not r["is_bot"]]
        return Counted(rows, since, len(chosen), len(days), len(futures), capped)

    return counted


def bucket_starts(period: Period) -> list[datetime]:
    """The UTC instants where the period's chart buckets begin: hours, or local midnights
    of each day or first of each month in the period's zone."""
    if period.grain == "hour":
        first = timebuckets.floor(period.start, "hour")
        hours = -(-(period.end - first) // timedelta(hours=1))
        return [first + timedelta(hours=i) for i in range(hours)]
    day = period.start.astimezone(period.zone).date()
    if period.grain == "month":
        day = day.replace(day=1)
    starts: list[datetime] = []
    while True:
        moment = datetime.combine(day, time(), tzinfo=period.zone).astimezone(UTC)
        if moment >= period.end:
            return starts
        starts.append(max(moment, period.start) if not starts else moment)
        if period.grain == "day":
            day += timedelta(days=1)
        else:
            day = (day.replace(day=28) + timedelta(days=4)).replace(day=1)


def _series(period: Period, counted: Counted) -> tuple[list[datetime], dict[str, list[Any]]]:
    """Each metric per chart bucket (None where nothing was counted: before `since`,
    after what has elapsed, or a ratio of no visits)."""
    starts = bucket_starts(period)
    grouped: list[list[dict[str, Any]]] = [[] for _ in starts]
    for row in counted.rows:
        index = bisect_right(starts, row["started_at"]) - 1
        if index >= 0:
            grouped[index].append(row)
    series: dict[str, list[Any]] = {key: [] for key in CHARTED}
    ends = [*starts[1:], period.end]
    for bucket_start, bucket_end, rows in zip(starts, ends, grouped, strict=True):
        counted_here = bucket_end > counted.since and bucket_start < period.elapsed_end
        kpis = kpis_count(rows)
        for key in CHARTED:
            value = getattr(kpis, key) if counted_here else None
            series[key].append(round(value, 4) if isinstance(value, float) else value)
    return starts, series


def chart_data(
    period: Period,
    counted: Counted,
    compared: Counted | None,
    metric: str,
) -> dict[str, Any]:
    """The chart's data from the counted sessions; states: "live" (counted
    from the rows now), "cut" (before what the budget allowed), "future"."""
    starts, series = _series(period, counted)
    ends = [*starts[1:], period.end]
    states = [
        "future" if s >= period.elapsed_end else "cut" if e <= counted.since else "live"
        for s, e in zip(starts, ends, strict=True)
    ]
    comparison = None
    previous = period.comparison()
    if previous is not None and compared is not None:
        old_starts, old_series = _series(previous, compared)
        size = len(starts)
        comparison = {
            "buckets": [_local(s, period) for s in old_starts[:size]]
            + [None] * max(0, size - len(old_starts)),
            "series": {k: v[:size] + [None] * max(0, size - len(v)) for k, v in old_series.items()},
        }
    return {
        "grain": period.grain,
        "zone": period.zone.key,
        "metric": metric if metric in CHARTED else "visitors",
        "metrics": CHARTED,
        "buckets": [_local(s, period) for s in starts],
        "states": states,
        "partial": period.in_progress(starts),
        "series": series,
        "comparison": comparison,
    }


def _local(moment: datetime, period: Period) -> str:
    return moment.astimezone(period.zone).isoformat()


def entry_pages(rows: list[dict[str, Any]], *, top: int = 10) -> list[tuple[str, int]]:
    """The most frequent entry pages of these sessions, with their visits."""
    counts = Counter(r["entry_path"] for r in rows if r["entry_path"])
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]


def breakdown_counts(rows: list[dict[str, Any]], *, top: int) -> dict[str, list[dict[str, Any]]]:
    """Each dimension's `top` values of these sessions by visits and the rest as "(other)",
    users exact (as aggregates.breakdowns.breakdown_rows shows them, without sketches:
    these rows are all there is to count)."""
    shown: dict[str, list[dict[str, Any]]] = {}
    for name, column in names().items():
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            groups[row[column] or NONE].append(row)
        ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        rest = [row for _, group in ranked[top:] for row in group]
        kept = ranked[:top] + ([(OTHER, rest)] if rest else [])
        shown[name] = [_row(value, group) for value, group in kept]
    return shown


def _row(value: str, group: list[dict[str, Any]]) -> dict[str, Any]:
    conversions = sum(1 for r in group if r["converted"])
    return {
        "value": value,
        "sessions": len(group),
        "users": len({r["user_key"] for r in group}),
        "conversions": conversions,
        "conversion_rate": round(conversions / len(group), 4),
    }
