"""The one range every page and the API read: a preset or custom span of whole days in
the site's time zone, the buckets its chart shows, and the period it is compared with.

URL (and API) parameters, the same on every page:
- `period`: today, yesterday, 24h, 7d, 30d, mtd, lastmonth, 12mo or custom (default 7d
  unless the page says otherwise); an unknown one is a RangeError naming `period`.
- `from` / `to`: a custom period's first and last day (YYYY-MM-DD, inclusive, in the
  site's zone); `to` defaults to today, `from` to `to`.
- `compare`: previous (default: the period just before, as long; a month-shaped period
  is compared with the month(s) before), year (the same dates a year earlier) or off.
  A link carries it unless it is the default, so "off" stays off as one goes on.
- Old links' `start` / `end` (ISO-8601 times, no zone meaning UTC) still work: a custom
  period between those exact times.

"Today", "7d" and the like include today: the period ends at midnight tonight, and what
is compared is only as much of the comparison period as has elapsed of this one (today
until now against yesterday until the same hour), so a day in progress is not set
against a whole one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter

from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import RangeError, time_param

PRESETS: dict[str, str] = {
    "today": "Today",
    "yesterday": "Yesterday",
    "24h": "Last 24 hours",
    "7d": "Last 7 days",
    "30d": "Last 30 days",
    "mtd": "Month to date",
    "lastmonth": "Last month",
    "12mo": "Last 12 months",
    "custom": "Custom",
}
COMPARES: dict[str, str] = {
    "off": "No comparison",
    "previous": "Previous period",
    "year": "Year before",
}
DEFAULT_PRESET = "7d"
DEFAULT_COMPARE = "previous"
MAX_DAYS = 731  # two years: a custom period's cap (charted by month past HOURLY/DAILY)
HOURLY_DAYS = 2  # a period this short (or shorter) is charted by hour
DAILY_DAYS = 92  # ... this short by day, longer by month
PARAMS = ("period", "from", "to", "compare", "start", "end")  # what a link carries
MONTH_SHAPED = ("mtd", "lastmonth", "12mo")


def site_zone(name: str | None) -> ZoneInfo:
    """A site's IANA time zone (UTC when unset or unknown)."""
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def zone_names() -> list[str]:
    """The IANA zones a site may choose, sorted (UTC first)."""
    return ["UTC", *sorted(z for z in available_timezones() if z != "UTC" and "/" in z)]


@dataclass(frozen=True)
class Period:
    """[start, end) in UTC, the zone its days are in, its chart's bucket width and what
    it is compared with. `now` cuts what has elapsed (see `elapsed_end`)."""

    key: str
    start: datetime
    end: datetime
    zone: ZoneInfo
    compare: str
    now: datetime
    first_day: date | None = None  # a custom period's days as asked (for the form)
    last_day: date | None = None

    @property
    def label(self) -> str:
        if self.key != "custom":
            return PRESETS[self.key]
        first = self.start.astimezone(self.zone)
        last = (self.end - timedelta(microseconds=1)).astimezone(self.zone)
        if first.date() == last.date():
            return f"{first:%d %b %Y}"
        return f"{first:%d %b %Y} \u2013 {last:%d %b %Y}"

    @property
    def grain(self) -> str:
        """The chart's buckets: "hour", "day" or "month"."""
        days = (self.end - self.start) / timedelta(days=1)
        if days <= HOURLY_DAYS:
            return "hour"
        return "day" if days <= DAILY_DAYS else "month"

    @property
    def elapsed_end(self) -> datetime:
        """The end of what has happened of the period so far (now, if it is still on)."""
        return min(self.end, max(self.start, self.now))

    def in_progress(self, starts: list[datetime]) -> int | None:
        """The index of the bucket still in progress among these (the chart's bucket
        starts, in order): the one holding now; None when none does."""
        ends = [*starts[1:], self.end]
        for index, (start, end) in enumerate(zip(starts, ends, strict=True)):
            if start <= self.now < end:
                return index
        return None

    def comparison(self) -> Period | None:
        """The period compared with (as long as this one, shifted back), or None."""
        if self.compare == "off":
            return None
        if self.compare == "year":
            start, end = _shift_months(self, 12)
        elif self.key in MONTH_SHAPED:
            months = 12 if self.key == "12mo" else 1
            start, end = _shift_months(self, months)
        else:
            span = self.end - self.start
            start, end = self.start - span, self.end - span
        shift = self.start - start
        return replace(
            self,
            key="custom",
            start=start,
            end=end,
            compare="off",
            now=self.now - shift,
            first_day=None,
            last_day=None,
        )

    def params(self) -> dict[str, str]:
        """The URL parameters that ask for this period again."""
        values = {"period": self.key}
        if self.key == "custom":
            if self.first_day and self.last_day:
                values["from"], values["to"] = self.first_day.isoformat(), self.last_day.isoformat()
            else:
                values["start"], values["end"] = _iso(self.start), _iso(self.end)
        if self.compare != DEFAULT_COMPARE:
            values["compare"] = self.compare
        return values


def period_param(
    params: Mapping[str, str],
    *,
    zone: ZoneInfo,
    now: datetime,
    default: str = DEFAULT_PRESET,
) -> Period:
    """The period the URL parameters ask for; RangeError naming the first bad one."""
    compare = params.get("compare") or DEFAULT_COMPARE
    if compare not in COMPARES:
        raise RangeError("compare", f"one of {', '.join(COMPARES)}")
    now = timebuckets.as_utc(now)
    if params.get("start") or params.get("end"):
        return _exact(params, zone=zone, now=now, compare=compare)
    key = params.get("period") or ("custom" if params.get("from") else default)
    if key not in PRESETS:
        raise RangeError("period", f"one of {', '.join(PRESETS)}")
    if key == "custom":
        return _custom(params, zone=zone, now=now, compare=compare)
    start, end = _preset(key, now.astimezone(zone).date(), zone, now)
    return Period(key, start, end, zone, compare, now)


def midnight(day: date, zone: ZoneInfo) -> datetime:
    """The UTC instant a day of the zone starts."""
    return datetime.combine(day, time(), tzinfo=zone).astimezone(UTC)


def _month_start(day: date, back: int = 0) -> date:
    months = day.year * 12 + day.month - 1 - back
    return date(months // 12, months % 12 + 1, 1)


def _preset(key: str, today: date, zone: ZoneInfo, now: datetime) -> tuple[datetime, datetime]:
    tomorrow = today + timedelta(days=1)
    if key == "24h":
        end = timebuckets.floor(now, "hour") + timedelta(hours=1)
        return end - timedelta(hours=24), end
    first: date = {
        "today": today,
        "yesterday": today - timedelta(days=1),
        "7d": today - timedelta(days=6),
        "30d": today - timedelta(days=29),
        "mtd": _month_start(today),
        "lastmonth": _month_start(today, 1),
        "12mo": _month_start(today, 11),
    }[key]
    last = {"yesterday": today, "lastmonth": _month_start(today)}.get(key, tomorrow)
    return midnight(first, zone), midnight(last, zone)


def _day(params: Mapping[str, str], name: str, default: date) -> date:
    value = (params.get(name) or "").strip()
    if not value:
        return default
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise RangeError(name, f"not a date (YYYY-MM-DD): {value[:40]!r}") from None


def _custom(params: Mapping[str, str], *, zone: ZoneInfo, now: datetime, compare: str) -> Period:
    today = now.astimezone(zone).date()
    last = _day(params, "to", today)
    first = _day(params, "from", last)
    if last < first:
        raise RangeError("to", "must not be before from")
    if (last - first).days + 1 > MAX_DAYS:
        raise RangeError("to", f"at most {MAX_DAYS} days; narrow the range")
    start, end = midnight(first, zone), midnight(last + timedelta(days=1), zone)
    _within_reach("from", start, now)
    _within_reach("to", end, now)
    return Period("custom", start, end, zone, compare, now, first, last)


def _exact(params: Mapping[str, str], *, zone: ZoneInfo, now: datetime, compare: str) -> Period:
    end = time_param(params, "end", now, now)
    start = time_param(params, "start", end - timedelta(days=7), now)
    if end <= start:
        raise RangeError("end", "must be after start")
    if end - start > timedelta(days=MAX_DAYS):
        raise RangeError("end", f"at most {MAX_DAYS} days; narrow the range")
    return Period("custom", start, end, zone, compare, now)


def _within_reach(name: str, value: datetime, now: datetime) -> None:
    if not timebuckets.within_reach(value, now=now):
        raise RangeError(name, "between 1970-01-01 and a year from now")


def _shift_months(period: Period, months: int) -> tuple[datetime, datetime]:
    """The period's local start and end moved `months` back (a 31st becomes the month's
    last day), in UTC."""

    def back(moment: datetime) -> datetime:
        local = moment.astimezone(period.zone)
        first = _month_start(local.date(), months)
        following = _month_start(first, -1)
        day = min(local.day, (following - first).days)
        moved = datetime.combine(first.replace(day=day), local.time(), tzinfo=period.zone)
        return moved.astimezone(UTC)

    return back(period.start), back(period.end)


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def capped(period: Period, days: int, what: str) -> tuple[datetime, datetime, str]:
    """[start, end) a read that covers at most `days` days answers for `period`, and a
    note when it had to cut (`what`: "Funnels cover"): the whole period, or its last
    `days` days. An old link's exact start/end past the cap stays an error (RangeError
    naming `end`), as before."""
    cap = timedelta(days=days)
    if period.end - period.start <= cap:
        return period.start, period.end, ""
    if period.key == "custom" and period.first_day is None:
        raise RangeError("end", f"range longer than {days} days; narrow it")
    note = f"{what} at most {days} days: showing the last {days} days of {period.label}"
    return period.end - cap, period.end, note


def days_shown(period: Period) -> str:
    """The period's first and last day in its zone ("21 Nov - 27 Nov 2026", an en dash)."""
    first = period.start.astimezone(period.zone)
    last = (period.end - timedelta(microseconds=1)).astimezone(period.zone)
    if period.grain == "hour" and first.time() != last.time().min:  # 24h: from an hour
        return f"{first:%-d %b %H:%M} \u2013 {period.end.astimezone(period.zone):%-d %b %H:%M}"
    if first.date() == last.date():
        return f"{first:%-d %b %Y}"
    head = f"{first:%-d %b}" if first.year == last.year else f"{first:%-d %b %Y}"
    return f"{head} \u2013 {last:%-d %b %Y}"


# How the API's schema describes the period (every range-reading route takes them; the
# old start/end, params.START / params.END, still work beside them).
API_PARAMETERS = [
    OpenApiParameter(
        "period",
        str,
        enum=list(PRESETS),
        description=f"a preset in the site's time zone (default {DEFAULT_PRESET}), or custom "
        "with from/to",
    ),
    OpenApiParameter("from", OpenApiTypes.DATE, description="custom: first day, YYYY-MM-DD"),
    OpenApiParameter("to", OpenApiTypes.DATE, description="custom: last day (inclusive)"),
    OpenApiParameter(
        "compare", str, enum=list(COMPARES), description="comparison period, default previous"
    ),
]
