"""The instants tests treat as the present: a fixed one, and a fixed time of a recent day."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

# Millisecond precision: Cassandra timestamps keep milliseconds.
FIXED_NOW = datetime(2026, 3, 14, 15, 9, 26, 535_000, tzinfo=UTC)


def recent_fixed(*, days_ago: int, at: timedelta) -> datetime:
    """Return `at` past midnight UTC, `days_ago` days before today.

    For data that goes through the collector, which stamps receipt with the real clock
    (so FIXED_NOW itself is too old for it): the data sits at the same time of a recent
    day, so which hours and days are whole, ended or due for sealing never depends on
    when the suite runs, provided the day is at least two back when its rollup must be
    due: for ALLOWED_LATENESS after midnight, yesterday's last hour is not sealed yet.
    """
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return today - timedelta(days=days_ago) + at
