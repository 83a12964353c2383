"""URL parameters the analysis pages and APIs share: times and page paths."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from sessions_app.aggregates import tally
from sessions_app.core import timebuckets
from sessions_app.core.bounds import RangeError, checked_range


def iso(value: datetime) -> str:
    """A UTC time as ISO-8601 with Z."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def time_param(params: Mapping[str, str], name: str, default: datetime, now: datetime) -> datetime:
    """An ISO-8601 time (no zone: UTC) within reach, else `default`; RangeError naming it."""
    value = params.get(name)
    if not value:
        return default
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise RangeError(name, f"not an ISO-8601 time: {value[:40]!r}") from None
    parsed = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    if not timebuckets.within_reach(parsed, now=now):
        raise RangeError(name, "between 1970-01-01 and a year from now")
    return parsed.astimezone(UTC)


def path_param(value: str) -> str:
    """A URL or path as the stored paths are (aggregates.tally.page_path); other text as is."""
    return (tally.page_path(value) or "/") if "://" in value or value.startswith("/") else value


def range_param(
    params: Mapping[str, str], *, now: datetime, default_span: timedelta
) -> tuple[datetime, datetime]:
    """`start` / `end` (ISO-8601; default the `default_span` before now; checked_range's
    cap); RangeError naming the bad one."""
    end = time_param(params, "end", now, now)
    return checked_range(time_param(params, "start", end - default_span, now), end)
