"""What the goal pages show of each goal's numbers: over the range control's period (the
site's days; every page's default) its conversions, converting visitors, conversion
rate and change against the period before, and a goal's conversions per day. The same
reads as the dashboard's goal table (features/analysis/goal_table.py), which these
figures equal for that period."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sessions_app.domain.goals.defs import Goal, goal_of
from sessions_app.features.analysis import goal_table
from sessions_app.features.analysis.kpi_report import period_report, site_period
from sessions_app.features.analysis.session_filter import bucket_starts
from sessions_app.features.web import periods
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Site


def stats_period(
    site: Site, params: Mapping[str, str], now: datetime | None = None
) -> tuple[periods.Period, str]:
    """The goal pages' period as the URL asks for it (against the one before), and "";
    for a bad one the default period and why it was not used."""
    now = now or datetime.now(UTC)
    try:
        return site_period(params, site=site, now=now)[0], ""
    except RangeError as exc:
        default = site_period({}, site=site, now=now)[0]
        return default, f"{exc}; showing {default.label.lower()} instead"


def goal_lines(site: Site, period: periods.Period) -> dict[int, goal_table.GoalLine]:
    """Each goal's line of the dashboard's goal table over the period, by goal id."""
    # the visitors alone: the goal table reads the goal counts itself
    report = period_report(site=site, period=period, grain="day", breakdown=False, conversion=False)
    table = goal_table.dashboard_goals(site_id=site.id, period=period, params={}, answer=report)
    return {line.goal.id: line for line in table.lines}


@dataclass(frozen=True)
class Day:
    """One day's conversions and its bar in the trend (x and y in the drawing's units)."""

    day: datetime  # its start, in the site's zone
    conversions: int
    x: int
    y: int
    height: int  # the busiest day's: BAR_HEIGHT


BAR_HEIGHT = 48
BAR_STEP = 3  # a bar 2 wide and a gap of 1


def goal_days(site: Site, goal: Any, period: periods.Period) -> list[Day]:
    """The goal's conversions on each day of the period (the site's days)."""
    compiled: Goal = goal_of(goal)
    starts = bucket_starts(period)
    ends = [*starts[1:], period.end]
    spans: list[goal_table.Span] = [
        (s, min(e, period.elapsed_end), ())
        for s, e in zip(starts, ends, strict=True)
        if s < min(e, period.elapsed_end)
    ]
    found = goal_table.goal_numbers(site_id=site.id, goals=[compiled], spans=spans)
    counts = [numbers[compiled.digest].conversions for numbers, _ in found]
    top = max(counts, default=0) or 1
    days = []
    for index, ((start, _, _), n) in enumerate(zip(spans, counts, strict=True)):
        height = round(BAR_HEIGHT * n / top)
        days.append(
            Day(start.astimezone(period.zone), n, index * BAR_STEP, BAR_HEIGHT - height, height)
        )
    return days


def trend_width(days: list[Day]) -> int:
    return max(1, len(days) * BAR_STEP)
