"""The caps every read shares: page sizes, range lengths, and the error that names the field."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from sessions_app.foundation.core import timebuckets

MAX_PAGE = 1000
MAX_RANGE_BUCKETS = 93


def bounded_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"limit must be between 1 and {MAX_PAGE}, got {limit}")
    return limit


def checked_time_uuid(value: uuid.UUID | None, field: str) -> uuid.UUID | None:
    """Refuse UUIDs that are not TimeUUIDs (version 1): Cassandra rejects them in queries."""
    if value is not None and value.version != 1:
        raise RangeError(field, "not an id issued by clickstream (expected a TimeUUID)")
    return value


MAX_RANGE = timedelta(days=92)


class RangeError(ValueError):
    """A requested time range or page size is outside the allowed bounds."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def checked_range(start: datetime, end: datetime) -> tuple[datetime, datetime]:
    start, end = timebuckets.as_utc(start), timebuckets.as_utc(end)
    if end <= start:
        raise RangeError("end", "must be after start")
    if end - start > MAX_RANGE:
        raise RangeError("end", f"range longer than {MAX_RANGE.days} days; narrow it")
    return start, end


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
