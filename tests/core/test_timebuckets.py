"""Bucket math at the edges: month ends, leap day, year end, exact boundaries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.timebuckets import BucketRangeError, Width


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    ("ts", "width", "expected"),
    [
        (utc(2024, 1, 15, 14, 37, 22), Width.TEN_MINUTES, utc(2024, 1, 15, 14, 30)),
        (utc(2024, 1, 15, 14, 37, 22), Width.HOUR, utc(2024, 1, 15, 14)),
        (utc(2024, 1, 15, 14, 37, 22), Width.DAY, utc(2024, 1, 15)),
        (utc(2024, 1, 15, 14, 37, 22), Width.WEEK, utc(2024, 1, 15)),  # a Monday
        (utc(2024, 1, 21, 23, 59, 59), Width.WEEK, utc(2024, 1, 15)),  # the Sunday after
        (utc(2024, 1, 15, 14, 37, 22), Width.MONTH, utc(2024, 1, 1)),
        (utc(2024, 2, 29, 23, 59, 59), Width.DAY, utc(2024, 2, 29)),  # leap day
        (utc(2024, 2, 29, 12), Width.MONTH, utc(2024, 2, 1)),
        (utc(2024, 12, 31, 23, 59, 59, 999999), Width.HOUR, utc(2024, 12, 31, 23)),
        (utc(2024, 12, 31, 23, 59, 59, 999999), Width.MONTH, utc(2024, 12, 1)),
        (utc(2025, 1, 1), Width.WEEK, utc(2024, 12, 30)),  # ISO week spans the year end
        (utc(1970, 1, 1), Width.WEEK, utc(1969, 12, 29)),
        (utc(2024, 3, 31, 23, 5), Width.TEN_MINUTES, utc(2024, 3, 31, 23)),
    ],
)
def test_floor(ts: datetime, width: Width, expected: datetime) -> None:
    assert timebuckets.floor(ts, width) == expected


def test_floor_of_a_bucket_start_is_itself() -> None:
    for width in Width:
        start = timebuckets.floor(utc(2024, 2, 29, 13, 41), width)
        assert timebuckets.floor(start, width) == start


@pytest.mark.parametrize(
    ("start", "width", "expected_end"),
    [
        (utc(2024, 1, 31), Width.MONTH, utc(2024, 2, 1)),
        (utc(2024, 2, 10), Width.MONTH, utc(2024, 3, 1)),  # leap February: 29 days
        (utc(2023, 2, 10), Width.MONTH, utc(2023, 3, 1)),
        (utc(2024, 12, 5), Width.MONTH, utc(2025, 1, 1)),  # year end
        (utc(2024, 12, 31, 23, 50), Width.TEN_MINUTES, utc(2025, 1, 1)),
        (utc(2024, 2, 28, 12), Width.DAY, utc(2024, 2, 29)),
    ],
)
def test_next_start(start: datetime, width: Width, expected_end: datetime) -> None:
    assert timebuckets.next_start(start, width) == expected_end


def test_month_durations_follow_the_calendar() -> None:
    assert timebuckets.duration(utc(2024, 2, 3), Width.MONTH) == timedelta(days=29)
    assert timebuckets.duration(utc(2023, 2, 3), Width.MONTH) == timedelta(days=28)
    assert timebuckets.duration(utc(2024, 4, 30), Width.MONTH) == timedelta(days=30)


def test_range_ending_exactly_on_a_boundary_excludes_the_next_bucket() -> None:
    got = timebuckets.buckets_between(utc(2024, 1, 1, 10), utc(2024, 1, 1, 13), Width.HOUR)
    assert got == [utc(2024, 1, 1, 10), utc(2024, 1, 1, 11), utc(2024, 1, 1, 12)]


def test_range_ending_just_past_a_boundary_includes_it() -> None:
    got = timebuckets.buckets_between(
        utc(2024, 1, 1, 10, 30), utc(2024, 1, 1, 12, 0, 0, 1), Width.HOUR
    )
    assert got == [utc(2024, 1, 1, 10), utc(2024, 1, 1, 11), utc(2024, 1, 1, 12)]


def test_range_across_leap_day_and_year_end() -> None:
    days = timebuckets.buckets_between(utc(2024, 2, 27, 5), utc(2024, 3, 2), Width.DAY)
    assert days == [utc(2024, 2, 27), utc(2024, 2, 28), utc(2024, 2, 29), utc(2024, 3, 1)]
    months = timebuckets.buckets_between(utc(2024, 11, 15), utc(2025, 2, 1), Width.MONTH)
    assert months == [utc(2024, 11, 1), utc(2024, 12, 1), utc(2025, 1, 1)]


def test_empty_range_has_no_buckets() -> None:
    assert timebuckets.buckets_between(utc(2024, 1, 1, 10), utc(2024, 1, 1, 10), Width.DAY) == []


def test_reversed_range_is_refused() -> None:
    with pytest.raises(ValueError, match="before its start"):
        timebuckets.buckets_between(utc(2024, 1, 2), utc(2024, 1, 1), Width.DAY)


def test_range_cap() -> None:
    assert (
        len(timebuckets.buckets_between(utc(2024, 1, 1), utc(2024, 1, 31), Width.DAY, limit=30))
        == 30
    )
    with pytest.raises(BucketRangeError, match="more than 30 day buckets"):
        timebuckets.buckets_between(utc(2024, 1, 1), utc(2024, 1, 31, 0, 0, 1), Width.DAY, limit=30)


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError, match="UTC-aware"):
        timebuckets.floor(datetime(2024, 1, 1, 12), Width.DAY)
    with pytest.raises(ValueError, match="UTC-aware"):
        timebuckets.buckets_between(datetime(2024, 1, 1), utc(2024, 1, 2), Width.DAY)


def test_other_offsets_are_converted_to_utc_first() -> None:
    cet = timezone(timedelta(hours=1))
    # 00:30 in UTC+1 is 23:30 UTC the day before: the UTC day bucket wins.
    assert timebuckets.floor(datetime(2024, 3, 1, 0, 30, tzinfo=cet), Width.DAY) == utc(2024, 2, 29)


def test_unknown_width_names_the_choices() -> None:
    with pytest.raises(ValueError, match="10m, hour, day, week, month"):
        timebuckets.parse_width("fortnight")


def test_from_driver_marks_naive_values_as_utc() -> None:
    assert timebuckets.from_driver(datetime(2024, 1, 1, 5)) == utc(2024, 1, 1, 5)


def test_as_driver_is_the_naive_utc_value_from_driver_reads_back() -> None:
    plus_two = timezone(timedelta(hours=2))
    value = datetime(2024, 1, 1, 7, tzinfo=plus_two)
    assert timebuckets.as_driver(value) == datetime(2024, 1, 1, 5)
    assert timebuckets.from_driver(timebuckets.as_driver(value)) == value
    with pytest.raises(ValueError, match="naive"):
        timebuckets.as_driver(datetime(2024, 1, 1, 5))
