"""The site report: sealed buckets from their aggregates, the open ones counted live."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from sessions_app.aggregates import breakdowns, totals
from sessions_app.aggregates.products import BREAKDOWNS, TOTALS
from sessions_app.aggregates.seal import hour_live
from sessions_app.aggregates.stored import aggregates_range
from sessions_app.core import timebuckets
from sessions_app.core.bounds import RangeError, checked_range
from sessions_app.models import BucketState

MAX_LIVE_HOURS = 72
MAX_REPORT_BUCKETS = 744  # 31 days of hours, or 92 days of days (the range cap)


@dataclass(frozen=True)
class ReportBucket:
    """One bucket of a site report and where its numbers came from."""

    bucket: datetime
    state: str  # "sealed" (stored aggregates), "live" (raw rows read now), "pending"
    aggregates: totals.Aggregates


def _live_hour(site_id: uuid.UUID, hour: datetime, shards: int) -> totals.Aggregates:
    """An unsealed hour's totals, counted from its raw rows as its seal would."""
    counted = hour_live(site_id=site_id, hour=hour, shards=shards, products=(TOTALS,))
    return counted[TOTALS.name]


def site_report(
    *, site_id: uuid.UUID, shards: int, start: datetime, end: datetime, width: str = "hour"
) -> dict[str, Any]:
    """Return a site's numbers per hour or day over [start, end), widened to whole buckets.

    Sealed buckets come from their stored aggregates (one slice per resolution);
    an unsealed day is merged from its sealed hours plus its other hours computed
    live from the raw partitions; at most MAX_LIVE_HOURS hours are computed live
    per report, later ones are "pending" until sealed. Each bucket says which.
    """
    start, end = checked_range(start, end)
    grain = timebuckets.parse_width(width)
    if grain not in (timebuckets.Width.HOUR, timebuckets.Width.DAY):
        raise RangeError("width", "hour or day")
    start, end = timebuckets.floor(start, grain), timebuckets.ceil(end, grain)
    try:
        shown = timebuckets.buckets_between(start, end, grain, limit=MAX_REPORT_BUCKETS)
    except timebuckets.BucketRangeError:
        raise RangeError("end", f"at most {MAX_REPORT_BUCKETS} {grain.value} buckets") from None
    known, hour_shards, sealed_at = _bucket_states(site_id, start, end)
    # Every event opens its hour's state: an hour past its sealing time without one
    # had no events, so it is empty, not unknown (no raw read needed).
    now = datetime.now(UTC)
    stored: dict[tuple[str, datetime], totals.Aggregates] = {}
    hours_from: datetime | None = start
    if grain is timebuckets.Width.DAY:
        stored.update(
            (("day", b), a)
            for b, a in aggregates_range(site_id=site_id, granularity="day", start=start, end=end)
        )
        # Hours only for the days not sealed: one slice from the first of them on.
        hours_from = next((b for b in shown if ("day", b) not in sealed_at), None)
    if hours_from is not None:
        stored.update(
            (("hour", b), a)
            for b, a in aggregates_range(
                site_id=site_id, granularity="hour", start=hours_from, end=end
            )
        )
    report, live_hours, partitions = _report_buckets(
        site_id, shown, grain, stored, known, hour_shards, sealed_at, shards=shards,
        settled=now - settings.ALLOWED_LATENESS,
    )  # fmt: skip
    summed = totals.aggregates_merge([r.aggregates for r in report]) if report else None
    breakdown, breakdown_live = _range_breakdown(site_id, start, end, sealed_at, known, now)
    return {
        "breakdowns": breakdown,
        "breakdown_live_hours": breakdown_live,
        "start": start,
        "end": end,
        "width": grain.value,
        "buckets": report,
        "totals": summed or totals.Aggregates(),
        "live_hours": live_hours,
        "raw_partitions_read": partitions,
        "pending": sum(1 for r in report if r.state == "pending"),
    }


def _report_buckets(
    site_id: uuid.UUID, shown: list[datetime], grain: timebuckets.Width,
    stored: dict[tuple[str, datetime], totals.Aggregates], known: dict[tuple[str, datetime], str],
    hour_shards: dict[datetime, int], sealed_at: set[tuple[str, datetime]], *, shards: int,
    settled: datetime,
) -> tuple[list[ReportBucket], int, int]:  # fmt: skip
    """Each shown bucket: stored when sealed, else merged from its sealed hours and its
    other hours counted live (MAX_LIVE_HOURS at most, then "pending"); also return the
    hours counted live and the raw partitions they read."""
    report: list[ReportBucket] = []
    live_hours, partitions = 0, 0
    for bucket in shown:
        key = (grain.value, bucket)
        if key in sealed_at and key in stored:
            report.append(ReportBucket(bucket, "sealed", stored[key]))
            continue
        parts: list[totals.Aggregates] = []
        state = "sealed"
        for hour in timebuckets.buckets_between(
            bucket, timebuckets.next_start(bucket, grain), "hour"
        ):
            if ("hour", hour) in sealed_at and ("hour", hour) in stored:
                parts.append(stored["hour", hour])
            elif ("hour", hour) not in known and timebuckets.next_start(hour, "hour") <= settled:
                continue  # empty
            elif live_hours < MAX_LIVE_HOURS:
                live_hours += 1
                used = max(shards, hour_shards.get(hour, 1))  # every shard the hour had
                partitions += used
                parts.append(_live_hour(site_id, hour, used))
                state = "live"
            else:
                state = "pending"
        merged = totals.aggregates_merge(parts) if parts else totals.Aggregates()
        report.append(ReportBucket(bucket, state, merged))
    return report, live_hours, partitions


def _range_breakdown(
    site_id: uuid.UUID,
    start: datetime,
    end: datetime,
    sealed_at: set[tuple[str, datetime]],
    known: dict[tuple[str, datetime], str],
    now: datetime,
) -> tuple[breakdowns.Breakdown, int]:
    """The breakdown of [start, end) (sealed buckets, live hours: `range_cover`); also
    return how many hours were counted live."""
    wanted, live = range_cover(start, end, sealed_at, known, now)
    parts = list(breakdowns.breakdowns_read(site_id=site_id, buckets=wanted).values())
    parts += [
        hour_live(site_id=site_id, hour=hour, shards=1, products=(BREAKDOWNS,))[BREAKDOWNS.name]
        for hour in live[-MAX_LIVE_HOURS:]
    ]
    merged = breakdowns.breakdown_merge(parts) if parts else {}
    return merged, min(len(live), MAX_LIVE_HOURS)


def range_cover(
    start: datetime,
    end: datetime,
    sealed_at: set[tuple[str, datetime]],
    known: dict[tuple[str, datetime], str],
    now: datetime,
) -> tuple[list[tuple[str, datetime]], list[datetime]]:
    """Which stored buckets cover [start, end) and which hours must be counted live:
    sealed days wholly inside it, else their sealed hours, else the hours that have
    a state or may still get events (oldest first)."""
    wanted: list[tuple[str, datetime]] = []
    live: list[datetime] = []
    day_start, day_end = timebuckets.floor(start, "day"), timebuckets.ceil(end, "day")
    for day in timebuckets.buckets_between(day_start, day_end, "day"):
        following = timebuckets.next_start(day, "day")
        if start <= day and following <= end and ("day", day) in sealed_at:
            wanted.append(("day", day))
            continue
        for hour in timebuckets.buckets_between(max(day, start), min(following, end), "hour"):
            if ("hour", hour) in sealed_at:
                wanted.append(("hour", hour))
            elif ("hour", hour) in known or (
                hour <= now < timebuckets.next_start(hour, "hour") + settings.ALLOWED_LATENESS
            ):  # a state: it has sessions; none yet, begun but not settled: it may have
                live.append(hour)
    return wanted, live


def bucket_cover(
    *, site_id: uuid.UUID, start: datetime, end: datetime
) -> tuple[list[tuple[str, datetime]], list[datetime], dict[datetime, int]]:
    """`range_cover` of [start, end) from the site's bucket states; also each hour's shards."""
    known, shards, sealed_at = _bucket_states(site_id, start, end)
    wanted, live = range_cover(start, end, sealed_at, known, datetime.now(UTC))
    return wanted, live, shards


def _bucket_states(
    site_id: uuid.UUID, start: datetime, end: datetime
) -> tuple[dict[tuple[str, datetime], str], dict[datetime, int], set[tuple[str, datetime]]]:
    """The states of the site's buckets in [start, end) ({(granularity, bucket): state}),
    each hour's shards, and the sealed ones."""
    known: dict[tuple[str, datetime], str] = {}
    shards: dict[datetime, int] = {}
    states = BucketState.objects.filter(site_id=site_id, bucket__gte=start, bucket__lt=end)
    for g, b, state, used in states.values_list("granularity", "bucket", "state", "shards"):
        known[g, timebuckets.as_utc(b)] = state
        if g == "hour":
            shards[timebuckets.as_utc(b)] = used
    sealed_at = {key for key, state in known.items() if state == BucketState.SEALED}
    return known, shards, sealed_at
