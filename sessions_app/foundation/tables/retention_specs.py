"""Retention policies: what each one covers, its bounds, and the lookup the writers use.

A policy is a number of days per kind of data. Writers bind it as `USING TTL ?`
on every new row; rows already written keep the TTL they were written with.
Purge (services.partitions_purge) deletes the bucket partitions that are wholly
older than the policy. Table options (TWCS window, `default_time_to_live`
backstop, `gc_grace_seconds`) come from `table_options` and are applied by
`sync_cassandra` (cqlengine ALTERs the options of existing tables).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings

from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.timebuckets import Width, parse_width

_TWCS_WINDOWS = {
    Width.TEN_MINUTES: ("MINUTES", 10),
    Width.HOUR: ("HOURS", 1),
    Width.DAY: ("DAYS", 1),
    Width.WEEK: ("DAYS", 7),
    Width.MONTH: ("DAYS", 30),
}


def twcs_window(width: Width | str) -> tuple[str, int]:
    """Return TWCS's (compaction_window_unit, compaction_window_size) for a bucket width.

    A month has no fixed length; 30-day windows keep at most two windows per month.
    """
    return _TWCS_WINDOWS[parse_width(width)]


RAW_EVENTS = "raw_events"
SESSIONS = "sessions"
AGGREGATES_HOUR = "aggregates_hour"
AGGREGATES_DAY = "aggregates_day"
AGGREGATES_MONTH = "aggregates_month"
FAILED_EVENTS = "failed_events"
TRANSACTION_LOG = "transaction_log"
# Identity links live as long as the longest-kept row they can lead an erasure to: the
# per-user counts an anonymous id left before identify() outlive its sessions.
LINKS = (SESSIONS, AGGREGATES_HOUR, AGGREGATES_DAY, AGGREGATES_MONTH)
MIN_DAYS = 1
MAX_DAYS = 3660  # ten years

# The longest rolling-counter window reads sealed buckets of every resolution up to
# a year back (aggregates.rolling.ROLLING_WINDOWS: 365 days), plus a leap day.
ROLLING_WINDOW_DAYS = 366


@dataclass(frozen=True)
class PolicySpec:
    """One retention policy and its limits (its tables: `tables.registry.tables_of_policy`)."""

    key: str
    label: str
    max_days: int  # also the tables' default_time_to_live backstop

    def default_days(self) -> int:
        """Return the days used while no policy row exists (from settings)."""
        return int(settings.RETENTION_DEFAULT_DAYS[self.key])

    def min_days(self) -> tuple[int, str]:
        """Return the shortest allowed retention and why it cannot be shorter."""
        if self.key == RAW_EVENTS:
            needed = settings.MAX_EVENT_AGE + settings.ALLOWED_LATENESS
            days = math.ceil(needed / timedelta(days=1)) + 1
            return days, (
                f"events up to {settings.MAX_EVENT_AGE.days} days old are still accepted "
                "and reopen their hour, whose reseal reads all of the hour's tallies "
                "(or raw rows) again; shorter raw retention would make that reseal undercount"
            )
        if self.key.startswith("aggregates_"):
            return ROLLING_WINDOW_DAYS + 1, (
                "the 12-month rolling counters read sealed buckets of every resolution up to "
                "a year old"
            )
        if self.key == TRANSACTION_LOG:
            return 1, "the redo task re-applies the log's entries of the last hours"
        return MIN_DAYS, "a policy keeps data at least a day"


SPECS: dict[str, PolicySpec] = {
    spec.key: spec
    for spec in (
        PolicySpec(RAW_EVENTS, "Raw events", max_days=1098),
        PolicySpec(SESSIONS, "Sessions", max_days=MAX_DAYS),
        PolicySpec(AGGREGATES_HOUR, "Aggregates, hourly", max_days=MAX_DAYS),
        PolicySpec(AGGREGATES_DAY, "Aggregates, daily", max_days=MAX_DAYS),
        PolicySpec(AGGREGATES_MONTH, "Aggregates, monthly", max_days=MAX_DAYS),
        PolicySpec(FAILED_EVENTS, "Failed events", max_days=366),
        PolicySpec(TRANSACTION_LOG, "Transaction log", max_days=90),
    )
}


class RetentionError(ValueError):
    """A policy value outside its bounds; the message says which bound and why."""


def validate_days(key: str, days: int) -> None:
    """Raise RetentionError unless `days` is allowed for policy `key`."""
    spec = SPECS.get(key)
    if spec is None:
        raise RetentionError(f"policy: unknown policy {key!r}; expected one of {', '.join(SPECS)}")
    low, why = spec.min_days()
    if days < low:
        raise RetentionError(f"{spec.label.lower()}: at least {low} days: {why}")
    if days > spec.max_days:
        raise RetentionError(
            f"{spec.label.lower()}: at most {spec.max_days} days (the tables' "
            "default_time_to_live backstop; raise it in retention.SPECS and sync_cassandra first)"
        )


def aggregate_key(granularity: str) -> str:
    """Return the policy key of one aggregate resolution ("hour" → "aggregates_hour")."""
    return f"aggregates_{timebuckets.parse_width(granularity).value}"


class TableOptions(Mapping[str, Any]):
    """A table's cqlengine `__options__`, resolved from settings when first read.

    cqlengine reads a model's options when it syncs the table, but its metaclass asks
    for `default_time_to_live` when the class is created: that one is known without
    settings, so the table modules (schema and statements) import without Django
    configured, as the bench's raw-driver baseline does.
    """

    def __init__(self, *, ttl_seconds: int, window: Callable[[], Width | str] | None) -> None:
        self._ttl_seconds = ttl_seconds
        self._window = window
        self._resolved: dict[str, Any] | None = None

    def _options(self) -> dict[str, Any]:
        if self._resolved is None:
            options: dict[str, Any] = {
                "gc_grace_seconds": settings.CASSANDRA_GC_GRACE_SECONDS,
                "default_time_to_live": self._ttl_seconds,
            }
            if self._window is not None:
                unit, size = twcs_window(self._window())
                options["compaction"] = {
                    "class": "TimeWindowCompactionStrategy",
                    "compaction_window_unit": unit,
                    "compaction_window_size": str(size),
                }
            else:
                options["compaction"] = {"class": "SizeTieredCompactionStrategy"}
            self._resolved = options
        return self._resolved

    def __getitem__(self, key: str) -> Any:
        if key == "default_time_to_live":
            return self._ttl_seconds
        return self._options()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._options())

    def __len__(self) -> int:
        return len(self._options())

    def __bool__(self) -> bool:
        return True


def table_options(
    *,
    policies: tuple[str, ...] = (),
    ttl_days: int | None = None,
    window: Width | str | Callable[[], Width | str] | None = None,
) -> TableOptions:
    """Return a cqlengine `__options__` mapping for a table.

    `default_time_to_live` is a backstop for a write that forgets its TTL: the
    longest retention any of the table's policies may be set to, so it never cuts
    a policy short. Time-bucketed tables written in time order get TWCS with a
    window equal to their bucket (a callable for a width read from settings), so a
    bucket's rows share SSTables that expire and are dropped whole.
    """
    backstop = ttl_days if ttl_days is not None else max(SPECS[p].max_days for p in policies)
    if window is None or callable(window):
        chosen = window
    else:
        fixed = window
        chosen = lambda: fixed  # noqa: E731
    return TableOptions(ttl_seconds=backstop * 86_400, window=chosen)
