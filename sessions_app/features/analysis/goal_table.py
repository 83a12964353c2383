"""The goal table: each goal's conversions, converting visits and visitors over a period,
its conversion rate and change against the comparison period, from the sealed goal
counts (bucket_goals: sealed days and hours, unsealed hours counted live).

Filtered by one dashboard filter on a dimension that breaks down (sealed per value, the
converting session's value); with other or more filters the numbers stay unfiltered and
the table says so. Conversions add up exactly; visits and visitors are exact for one
stored bucket, over several from merged sketches (±1.6 %), like the breakdowns.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sessions_app.domain.aggregates import goal_counts as goal_counts
from sessions_app.domain.aggregates.breakdowns import names as breakdown_names
from sessions_app.domain.aggregates.sketch import sketch_estimate, sketch_union
from sessions_app.domain.goals.defs import Goal, site_goals
from sessions_app.features.analysis import conversions
from sessions_app.features.analysis.dashboard import FilteredAnswer, dashboard_filters
from sessions_app.features.analysis.kpi_report import PeriodReport
from sessions_app.features.web.periods import Period
from sessions_app.foundation.core.bounds import RangeError


@dataclass(frozen=True)
class GoalNumbers:
    """One goal's numbers over a range."""

    conversions: int
    visits: int | None  # None: not asked for (their sketches are not merged)
    visitors: int | None


@dataclass(frozen=True)
class GoalLine:
    """One row of the table."""

    goal: Goal
    numbers: GoalNumbers
    rate: float | None  # converting visitors / visitors
    change: float | None  # conversions against the comparison's, relative
    filter: tuple[str, str] | None  # the dashboard filter that selects its sessions


@dataclass(frozen=True)
class GoalTable:
    lines: list[GoalLine]
    note: str  # why the numbers are not filtered, or which hours are still counting
    pending_hours: int


Span = conversions.Span


def goal_numbers(
    *,
    site_id: uuid.UUID,
    goals: list[Goal],
    spans: list[Span],
    dimension: str = "",
    value: str = "",
) -> list[tuple[dict[str, GoalNumbers], int]]:
    """Each span's goal numbers (by digest) over [start, end) in whole UTC hours, of the
    sessions with this dimension value (or all): conversions, and the distinct counts the
    span asks for (visits, visitors: their sketches merged, the only ones read); also how
    many unsealed hours were past MAX_LIVE_HOURS and left out (conversions.span_entries)."""
    found = conversions.span_entries(
        site_id=site_id, goals=goals, spans=spans, dimension=dimension, value=value
    )
    return [
        ({digest: _numbers(entries, distinct) for digest, entries in grouped.items()}, pending)
        for (grouped, pending), (_, _, distinct) in zip(found, spans, strict=True)
    ]


def _numbers(entries: list[goal_counts.GoalCount], distinct: tuple[str, ...]) -> GoalNumbers:
    """One goal's entries added up: conversions, and the distinct counts asked for (exact
    from a single bucket, else the estimate of the sketches' union)."""
    if len(entries) == 1:
        one = entries[0]
        return GoalNumbers(
            one.conversions,
            one.sessions if "visits" in distinct else None,
            one.users if "visitors" in distinct else None,
        )
    visits = sketch_union(e.sessions_sketch for e in entries) if "visits" in distinct else None
    visitors = sketch_union(e.users_sketch for e in entries) if "visitors" in distinct else None
    return GoalNumbers(
        sum(e.conversions for e in entries),
        None if visits is None else sketch_estimate(visits),
        None if visitors is None else sketch_estimate(visitors),
    )


def goal_filter(goal: Goal) -> tuple[str, str] | None:
    """The dashboard filter whose sessions are exactly the goal's: a page view of one
    path, a custom event by name (else None: a pattern, a click, property conditions)."""
    step = goal.definition
    if step.get("properties"):
        return None
    if step["kind"] == "pageview" and step.get("match") == "exact":
        return "page", step["path"]
    if step["kind"] == "event":
        return "event", step["name"]
    return None


def dashboard_goals(
    *,
    site_id: uuid.UUID,
    period: Period,
    params: Mapping[str, str],
    answer: PeriodReport | FilteredAnswer,
    visits: bool = False,
) -> GoalTable:
    """The dashboard's goal table over the period, filtered as the URL asks where it can
    be (see the module); rates against the visitors of `answer` (the KPIs shown);
    converting visits only if asked (the API)."""
    goals = site_goals(site_id)
    if not goals:
        return GoalTable([], "", 0)
    try:
        filters = dashboard_filters(params)
    except RangeError:
        filters = {}  # the dashboard says what is wrong with it
    dimension, value, note = _filter_of(filters)
    distinct = ("visits", "visitors") if visits else ("visitors",)
    before = period.comparison()
    spans: list[Span] = [(period.start, period.end, distinct)]
    if before is not None:  # its conversions only (the change)
        spans.append((before.start, before.elapsed_end, ()))
    found = goal_numbers(
        site_id=site_id, goals=goals, spans=spans, dimension=dimension, value=value
    )
    (current, pending), previous = found[0], found[1][0] if before is not None else {}
    lines = [
        GoalLine(
            goal=goal,
            numbers=current[goal.digest],
            rate=_rate(current[goal.digest].visitors, answer.kpis.visitors),
            change=_change(current[goal.digest], previous.get(goal.digest)),
            filter=goal_filter(goal),
        )
        for goal in goals
    ]
    lines.sort(key=lambda line: (-line.numbers.conversions, line.goal.name))
    return GoalTable(lines, note, pending)


def _filter_of(filters: Mapping[str, str]) -> tuple[str, str, str]:
    """(dimension, value, note): the one breakdown filter the goal counts are sealed by."""
    if not filters:
        return "", "", ""
    names = breakdown_names()
    if len(filters) == 1:
        ((name, value),) = filters.items()
        if name in names:
            return name, value, ""
    return (
        "",
        "",
        (
            "Goal numbers are not filtered: they are kept per value of one dimension "
            f"({', '.join(names)}), and this view has other or more filters."
        ),
    )


def _rate(converting: int | None, visitors: int) -> float | None:
    return min(1.0, converting / visitors) if visitors and converting is not None else None


def _change(now: GoalNumbers, before: GoalNumbers | None) -> float | None:
    if before is None or not before.conversions:
        return None
    return (now.conversions - before.conversions) / before.conversions


def table_rows(table: GoalTable) -> list[dict[str, Any]]:
    """The table as JSON (the API and the CSV)."""
    return [
        {
            "goal": line.goal.name,
            "goal_id": line.goal.id,
            "definition": line.goal.definition,
            "conversions": line.numbers.conversions,
            "visits": line.numbers.visits,
            "visitors": line.numbers.visitors,
            "conversion_rate": None if line.rate is None else round(line.rate, 4),
            "change": None if line.change is None else round(line.change, 4),
            "exact_from": line.goal.exact_from,
        }
        for line in table.lines
    ]
