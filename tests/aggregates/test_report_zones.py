"""A report's buckets in the site's zone (domain/aggregates/report.py): whole-hour zones' days and
months from UTC hours, half-hour zones refused with a message naming the zone (and shown
in UTC by the pages), and which stored buckets add up to a range."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from zoneinfo import ZoneInfo

import pytest

from sessions_app.domain.aggregates.report import cover, local_edges
from sessions_app.features.analysis.kpi_report import site_period
from sessions_app.foundation.core.bounds import RangeError

BERLIN = ZoneInfo("Europe/Berlin")


def test_berlin_days_start_at_its_midnights_across_the_summer_time_change() -> None:
    edges = local_edges(
        datetime(2026, 3, 28, 12, tzinfo=UTC), datetime(2026, 3, 30, 12, tzinfo=UTC), BERLIN, "day"
    )
    assert edges == [
        datetime(2026, 3, 27, 23, tzinfo=UTC),
        datetime(2026, 3, 28, 23, tzinfo=UTC),  # 29 March is 23 hours long
        datetime(2026, 3, 29, 22, tzinfo=UTC),
        datetime(2026, 3, 30, 22, tzinfo=UTC),
    ]


def test_months_of_a_zone_and_of_utc() -> None:
    start, end = datetime(2026, 1, 15, tzinfo=UTC), datetime(2026, 3, 2, tzinfo=UTC)
    assert local_edges(start, end, UTC, "month") == [
        datetime(2026, m, 1, tzinfo=UTC) for m in (1, 2, 3, 4)
    ]
    assert local_edges(start, end, ZoneInfo("America/New_York"), "month")[:2] == [
        datetime(2026, 1, 1, 5, tzinfo=UTC),
        datetime(2026, 2, 1, 5, tzinfo=UTC),
    ]


def test_a_half_hour_zone_is_refused_and_the_page_shows_utc() -> None:
    kolkata = ZoneInfo("Asia/Kolkata")
    with pytest.raises(RangeError) as refused:
        local_edges(
            datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 3, 3, tzinfo=UTC), kolkata, "day"
        )
    assert refused.value.field == "zone" and "Asia/Kolkata is +0530" in str(refused.value)
    site = SimpleNamespace(time_zone="Asia/Kolkata")
    now = datetime(2026, 3, 14, 15, tzinfo=UTC)
    period, note = site_period({"period": "7d"}, site=site, now=now)  # type: ignore[arg-type]
    assert str(period.zone) == "UTC" and "Asia/Kolkata is a half-hour offset" in note
    berlin = SimpleNamespace(time_zone="Europe/Berlin")
    period, note = site_period({"period": "7d"}, site=berlin, now=now)  # type: ignore[arg-type]
    assert period.zone == BERLIN and note == ""


def test_a_range_adds_up_from_sealed_months_and_days_else_hours() -> None:
    hour = timedelta(hours=1)
    start = datetime(2026, 1, 31, 23, tzinfo=UTC)  # a Berlin month: 1 Feb 00:00 CET
    end = datetime(2026, 2, 28, 23, tzinfo=UTC)
    sealed = {("day", datetime(2026, 2, d, tzinfo=UTC)) for d in range(1, 29)}
    units = cover(start, end, sealed)
    assert units[0] == ("hour", start)
    assert units[1:28] == [("day", datetime(2026, 2, d, tzinfo=UTC)) for d in range(1, 28)]
    assert units[28:] == [("hour", datetime(2026, 2, 28, tzinfo=UTC) + i * hour) for i in range(23)]
    whole = cover(
        datetime(2026, 2, 1, tzinfo=UTC),
        datetime(2026, 3, 1, tzinfo=UTC),
        {("month", datetime(2026, 2, 1, tzinfo=UTC))},
    )
    assert whole == [("month", datetime(2026, 2, 1, tzinfo=UTC))]
