"""The one range every page reads (sessions_app/features/web/periods.py): presets in the site's
zone, custom days, comparisons, the URL round trip and the errors that name the field."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessions_app.features.web.periods import MAX_DAYS, PRESETS, period_param, site_zone
from sessions_app.foundation.core.bounds import RangeError
from tests.support.hypothesis import examples

NOW = datetime(2026, 3, 31, 22, 30, tzinfo=UTC)  # 1 April 00:30 in Berlin (summer time)
BERLIN = ZoneInfo("Europe/Berlin")
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Pacific/Auckland"]


def test_today_is_the_local_day_and_compared_until_the_same_hour() -> None:
    period = period_param({"period": "today", "compare": "previous"}, zone=BERLIN, now=NOW)
    assert period.start == datetime(2026, 3, 31, 22, tzinfo=UTC)  # 1 April 00:00 CEST
    assert period.end == datetime(2026, 4, 1, 22, tzinfo=UTC)
    assert period.grain == "hour" and period.elapsed_end == NOW
    before = period.comparison()
    assert before is not None
    assert (before.start, before.end) == (period.start - timedelta(days=1), period.start)
    assert before.elapsed_end == NOW - timedelta(days=1)


def test_month_shaped_periods_compare_with_calendar_months() -> None:
    last = period_param({"period": "lastmonth", "compare": "previous"}, zone=BERLIN, now=NOW)
    # March in Berlin: 1 March 00:00 CET to 1 April 00:00 CEST.
    assert last.start == datetime(2026, 2, 28, 23, tzinfo=UTC)
    assert last.end == datetime(2026, 3, 31, 22, tzinfo=UTC)
    before = last.comparison()
    assert before is not None
    assert (before.start, before.end) == (
        datetime(2026, 1, 31, 23, tzinfo=UTC),
        datetime(2026, 2, 28, 23, tzinfo=UTC),
    )
    year = period_param({"period": "12mo"}, zone=ZoneInfo("UTC"), now=NOW)
    assert (year.start, year.end, year.grain) == (
        datetime(2025, 4, 1, tzinfo=UTC),
        datetime(2026, 4, 1, tzinfo=UTC),
        "month",
    )


def test_custom_days_and_old_links() -> None:
    custom = period_param({"from": "2026-01-01", "to": "2026-01-31"}, zone=BERLIN, now=NOW)
    assert custom.key == "custom" and custom.grain == "day"
    assert custom.params() == {"period": "custom", "from": "2026-01-01", "to": "2026-01-31"}
    old = period_param(
        {"start": "2026-03-01T10:00", "end": "2026-03-01T12:00Z"}, zone=BERLIN, now=NOW
    )
    assert (old.start, old.end) == (
        datetime(2026, 3, 1, 10, tzinfo=UTC),
        datetime(2026, 3, 1, 12, tzinfo=UTC),
    )
    assert period_param(old.params(), zone=BERLIN, now=NOW) == old


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"period": "fortnight"}, "period"),
        ({"compare": "lastyear"}, "compare"),
        ({"period": "custom", "from": "1 Jan"}, "from"),
        ({"period": "custom", "from": "2026-02-01", "to": "2026-01-01"}, "to"),
        ({"period": "custom", "from": "2020-01-01", "to": "2026-01-01"}, "to"),
        ({"start": "yesterday"}, "start"),
        ({"start": "2026-03-02T00:00Z", "end": "2026-03-01T00:00Z"}, "end"),
    ],
)
def test_a_bad_parameter_is_named(params: dict[str, str], field: str) -> None:
    with pytest.raises(RangeError) as caught:
        period_param(params, zone=BERLIN, now=NOW)
    assert caught.value.field == field


def test_an_unknown_zone_is_utc() -> None:
    assert site_zone("Mars/Olympus") == ZoneInfo("UTC") and site_zone("") == ZoneInfo("UTC")


@settings(max_examples=examples(300), deadline=None)
@given(
    key=st.sampled_from(sorted(PRESETS.keys() - {"custom"})),
    compare=st.sampled_from(["off", "previous", "year"]),
    zone=st.sampled_from(ZONES),
    now=st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2037, 12, 31)),
)
def test_every_preset_in_every_zone(key: str, compare: str, zone: str, now: datetime) -> None:
    tz = ZoneInfo(zone)
    moment = now.replace(tzinfo=UTC)
    period = period_param({"period": key, "compare": compare}, zone=tz, now=moment)
    assert period.start < period.end and period.end - period.start <= timedelta(days=MAX_DAYS)
    if key != "24h":  # whole local days
        assert period.start.astimezone(tz).time() == period.end.astimezone(tz).time()
        assert period.start.astimezone(tz).hour == 0 or period.start.astimezone(tz).minute == 0
    if key in ("today", "7d", "30d", "mtd", "12mo", "24h"):
        assert period.start <= moment < period.end
    else:
        assert period.end <= moment + timedelta(days=1)
    assert period_param(period.params(), zone=tz, now=moment) == period
    before = period.comparison()
    if compare == "off":
        assert before is None
        return
    assert before is not None and before.end <= period.end and before.start < period.start
    assert before.elapsed_end - before.start == period.elapsed_end - period.start or (
        key in ("mtd", "lastmonth", "12mo") or compare == "year"
    )
    if compare == "year":
        assert before.start.astimezone(tz).year == period.start.astimezone(tz).year - 1


def test_day_arithmetic_survives_the_dst_change() -> None:
    # 29 March 2026: Berlin moves to summer time; the day has 23 hours.
    custom = period_param({"from": "2026-03-29", "to": "2026-03-29"}, zone=BERLIN, now=NOW)
    assert custom.end - custom.start == timedelta(hours=23)
    assert custom.first_day == date(2026, 3, 29)


def test_a_time_before_the_first_utc_instant_is_a_range_error_not_a_crash():
    with pytest.raises(RangeError) as error:
        period_param({"start": "0001-01-01T00:00+01:00"}, zone=BERLIN, now=NOW)
    assert error.value.field == "start"
