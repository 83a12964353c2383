"""Time-bucket math: the only place that turns instants into bucket starts and back.

All functions take and return UTC-aware datetimes and refuse naive ones: a naive
datetime is ambiguous, and a bucket computed from local time lands in the wrong
partition. Buckets are half-open intervals [start, start + width).
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The driver reads Cassandra timestamps back as naive UTC datetimes: a scan's hot loop
# takes milliseconds as (value - DRIVER_EPOCH) // ONE_MS (driver_ms does it once).
DRIVER_EPOCH = EPOCH.replace(tzinfo=None)
ONE_MS = timedelta(milliseconds=1)


class Width(enum.StrEnum):
    """Supported bucket widths, finest first."""

    TEN_MINUTES = "10m"
    HOUR = "hour"
    DAY = "day"
    WEEK = "week"
    MONTH = "month"


_FIXED = {
    Width.TEN_MINUTES: timedelta(minutes=10),
    Width.HOUR: timedelta(hours=1),
    Width.DAY: timedelta(days=1),
    Width.WEEK: timedelta(weeks=1),
}

_BY_NAME = {w.value: w for w in Width}  # parse_width's dictionary (Width(...) is slow)

# Weeks start on Monday (ISO 8601); 1970-01-05 was the first Monday after the epoch.
_WEEK_ORIGIN = datetime(1970, 1, 5, tzinfo=UTC)


class BucketRangeError(ValueError):
    """A requested range needs more buckets than the caller allows."""


def as_utc(value: datetime) -> datetime:
    """Return value in UTC; raise ValueError for naive datetimes."""
    if value.tzinfo is UTC:
        return value
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"naive datetime {value.isoformat()}: UTC-aware datetimes only")
    return value.astimezone(UTC)


def floor_ms(ts: datetime) -> datetime:
    """ts without its sub-millisecond part (what a Cassandra timestamp keeps)."""
    return ts.replace(microsecond=ts.microsecond - ts.microsecond % 1000)


def epoch_us(ts: datetime) -> int:
    """Microseconds since the epoch (exact integer arithmetic)."""
    delta = as_utc(ts) - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def epoch_minute(ts: datetime) -> int:
    """Whole minutes since the epoch (the realtime keys' minute)."""
    return epoch_us(ts) // 60_000_000


def epoch_ms(value: datetime) -> int:
    """Milliseconds since the epoch, floored (what a Cassandra timestamp stores).

    Raises TypeError for a naive datetime (it cannot be subtracted from EPOCH).
    """
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def driver_ms(value: datetime) -> int:
    """Milliseconds since the epoch of a time as the driver reads it (naive UTC), or of
    an aware one."""
    return (value - DRIVER_EPOCH) // ONE_MS if value.tzinfo is None else epoch_ms(value)


def from_epoch_ms(value: int) -> datetime:
    """The UTC instant `value` milliseconds after the epoch (inverse of epoch_ms)."""
    return EPOCH + timedelta(milliseconds=value)


def within_reach(value: datetime, *, now: datetime) -> bool:
    """Whether a time a reader asks for lies between the epoch and a year after now.

    Nothing is stored outside, and bucket arithmetic near year 1 or 9999 overflows.
    Aware datetimes compare as instants, without the conversion that can overflow.
    """
    return EPOCH <= value <= now + timedelta(days=366)


def from_driver(value: datetime) -> datetime:
    """Mark a naive datetime read from Cassandra (always UTC) as UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def as_driver(value: datetime) -> datetime:
    """Return the naive UTC datetime the driver reads back for value (from_driver's inverse)."""
    return as_utc(value).replace(tzinfo=None)


def parse_width(value: str | Width) -> Width:
    """Return the Width for "10m", "hour", "day", "week" or "month"."""
    found = _BY_NAME.get(value)
    if found is None:
        choices = ", ".join(w.value for w in Width)
        raise ValueError(f"unknown bucket width {value!r}; expected one of {choices}")
    return found


def floor(ts: datetime, width: Width | str) -> datetime:
    """Return the start of the bucket of the given width that contains ts."""
    ts = as_utc(ts)
    width = parse_width(width)
    if width is Width.MONTH:
        return ts.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if width is Width.WEEK:
        return _WEEK_ORIGIN + ((ts - _WEEK_ORIGIN) // _FIXED[width]) * _FIXED[width]
    step = _FIXED[width]
    return EPOCH + ((ts - EPOCH) // step) * step


def next_start(start: datetime, width: Width | str) -> datetime:
    """Return the start of the bucket after the one containing start (its exclusive end)."""
    start = floor(start, width)
    width = parse_width(width)
    if width is Width.MONTH:
        year, month = (start.year + 1, 1) if start.month == 12 else (start.year, start.month + 1)
        return start.replace(year=year, month=month)
    return start + _FIXED[width]


def duration(start: datetime, width: Width | str) -> timedelta:
    """Return the length of the bucket that contains start (months vary)."""
    return next_start(start, width) - floor(start, width)


def nominal_duration(width: Width | str) -> timedelta:
    """Return a bucket's typical length, for sizing estimates (a month counts 30 days)."""
    width = parse_width(width)
    return timedelta(days=30) if width is Width.MONTH else _FIXED[width]


def iter_buckets(start: datetime, end: datetime, width: Width | str) -> Iterator[datetime]:
    """Yield the starts of every bucket overlapping the half-open range [start, end)."""
    start, end = as_utc(start), as_utc(end)
    if end < start:
        raise ValueError(f"range end {end.isoformat()} is before its start {start.isoformat()}")
    if start == end:
        return
    current = floor(start, width)
    while current < end:
        yield current
        current = next_start(current, width)


def buckets_between(
    start: datetime, end: datetime, width: Width | str, *, limit: int | None = None
) -> list[datetime]:
    """Return the bucket starts covering [start, end); raise BucketRangeError past limit."""
    result: list[datetime] = []
    for bucket in iter_buckets(start, end, width):
        if limit is not None and len(result) >= limit:
            raise BucketRangeError(
                f"range {as_utc(start).isoformat()}..{as_utc(end).isoformat()} spans more than "
                f"{limit} {parse_width(width).value} buckets; narrow it"
            )
        result.append(bucket)
    return result


def ceil(ts: datetime, width: Width | str) -> datetime:
    """Return the start of the first bucket that starts at or after ts."""
    start = floor(ts, width)
    return start if start == as_utc(ts) else next_start(start, width)


def rolling_period(width: Width | str, bucket: datetime) -> datetime:
    """Return the partition period of a rolling-counter row: the month of an hour row,
    the year of a day row, the epoch for month rows (a dozen rows a year)."""
    width = parse_width(width)
    bucket = as_utc(bucket)
    if width is Width.HOUR:
        return floor(bucket, Width.MONTH)
    if width is Width.DAY:
        return bucket.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    if width is Width.MONTH:
        return EPOCH
    raise ValueError(f"no rolling counters at {width.value} resolution")


def rolling_period_end(width: Width | str, period: datetime) -> datetime:
    """Return the end of a rolling-counter partition period (see rolling_period)."""
    width = parse_width(width)
    if width is Width.HOUR:
        return next_start(period, Width.MONTH)
    if width is Width.DAY:
        return as_utc(period).replace(year=period.year + 1)
    raise ValueError(f"month rows have one period, the epoch; {width.value} has no end")


RAW = "raw"


def cover(
    start: datetime,
    end: datetime,
    widths: tuple[Width, ...],
    usable: Callable[[Width, datetime], bool],
) -> list[tuple[str, datetime, datetime]]:
    """Cover [start, end) with the largest usable buckets that fit inside it, in time order.

    `widths` go coarsest first (month, day, hour). Each bucket of the coarsest
    width that lies entirely inside the range is used if `usable` says so (it is
    sealed), otherwise it is covered by finer ones; the edges are covered by finer
    widths, and what no bucket covers is left as ("raw", start, end) pieces,
    merged when adjacent. Returns (width or "raw", piece start, piece end).
    """
    start, end = as_utc(start), as_utc(end)
    pieces: list[tuple[str, datetime, datetime]] = []

    def walk(low: datetime, high: datetime, level: int) -> None:
        if high <= low:
            return
        if level == len(widths):
            if pieces and pieces[-1][0] == RAW and pieces[-1][2] == low:
                pieces[-1] = (RAW, pieces[-1][1], high)
            else:
                pieces.append((RAW, low, high))
            return
        width = widths[level]
        current = ceil(low, width)
        if current >= high or next_start(current, width) > high:
            walk(low, high, level + 1)
            return
        walk(low, current, level + 1)
        while (following := next_start(current, width)) <= high:
            if usable(width, current):
                pieces.append((width.value, current, following))
            else:
                walk(current, following, level + 1)
            current = following
        walk(current, high, level + 1)

    walk(start, end, 0)
    return pieces


def fully_expired_before(now: datetime, keep: timedelta, width: Width | str) -> datetime:
    """Return the start of the first bucket not yet wholly older than `keep` at `now`.

    Every bucket starting before the returned instant ends at or before now - keep,
    so all of it is past retention; the bucket holding now - keep is not.
    """
    return floor(as_utc(now) - keep, width)


def count_buckets(start: datetime, width: Width | str) -> list[tuple[Width, datetime]]:
    """Return the sealed-aggregate buckets whose per-user counts name every user of a bucket.

    Per-user counts exist per hour, day and month; a user bucket of `width` at
    `start` lies inside one hour (10 min, hour), one day, seven days (week) or one
    month, so those count partitions list every user with events in it.
    """
    width = parse_width(width)
    start = floor(start, width)
    if width in (Width.TEN_MINUTES, Width.HOUR):
        return [(Width.HOUR, floor(start, Width.HOUR))]
    if width is Width.WEEK:
        return [
            (Width.DAY, day) for day in iter_buckets(start, next_start(start, width), Width.DAY)
        ]
    return [(width, start)]


def width_at(
    ts: datetime, default: Width | str, changes: Sequence[tuple[datetime, Width]]
) -> Width:
    """Return the width in force at ts: the last change effective at or before it."""
    width = parse_width(default)
    ts = as_utc(ts)
    for effective_from, changed in changes:  # sorted by effective_from
        if as_utc(effective_from) <= ts:
            width = parse_width(changed)
    return width


def bucket_of(
    ts: datetime, default: Width | str, changes: Sequence[tuple[datetime, Width]]
) -> datetime:
    """Return the start of ts's bucket under a width history."""
    return floor(ts, width_at(ts, default, changes))


def buckets_with_history(
    start: datetime,
    end: datetime,
    default: Width | str,
    changes: Sequence[tuple[datetime, Width]],
    *,
    limit: int | None = None,
) -> list[datetime]:
    """Return the bucket starts covering [start, end) when the width changed over time.

    Each change applies from its effective time (a bucket boundary of the width
    before it, so old and new buckets never overlap); the range is split there and
    each part enumerated at its own width. The limit applies to the total.
    """
    start, end = as_utc(start), as_utc(end)
    cuts = [as_utc(t) for t, _ in changes if start < as_utc(t) < end]
    edges = [start, *cuts, end]
    result: list[datetime] = []
    for low, high in itertools.pairwise(edges):
        width = width_at(low, default, changes)
        for bucket in iter_buckets(low, high, width):
            if result and bucket <= result[-1]:
                continue  # the first bucket of a part may start before the cut
            if limit is not None and len(result) >= limit:
                raise BucketRangeError(
                    f"range {start.isoformat()}..{end.isoformat()} spans more than {limit} buckets"
                )
            result.append(bucket)
    return result
