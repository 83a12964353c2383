"""The dashboard's filters: which the URL asks for, their chips and links, the numbers
they leave, and the latest sessions of the period.

Filters use the explorer's URL names (`explorer.filter_names()`), so a dashboard link
opens Sessions with the same filter. Filtered numbers (KPIs, chart, breakdowns, entry
pages) come from the matching sessions' site_sessions rows within a partition budget
(features/analysis/session_filter.py), except one breakdown value's KPIs and chart, which the sealed
per-bucket counts answer when they kept it (`sealed_value`). Page views per page and
clicks are counted per event, which those rows do not keep: with a filter the page shows
the sessions' entry pages instead and says that clicks cannot be session_filter.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from sessions_app.domain.aggregates import breakdowns
from sessions_app.domain.aggregates.kpis import Kpis
from sessions_app.domain.goals.defs import site_goals
from sessions_app.features.analysis import conversions, explorer, session_filter
from sessions_app.features.analysis.kpi_report import breakdown_kpis, value_chart
from sessions_app.features.web.periods import Period
from sessions_app.foundation import dimensions
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.models import Site
from sessions_app.foundation.tables import user_sessions

LATEST = 15  # latest sessions shown
TOP = 8  # breakdown rows shown per dimension
# How a chip says a filter that is not a dimension (a dimension: "<its label> is <value>").
PHRASES = {
    "page": "Visited page is {}",
    "event": "Did event {}",
    "converted": "Converted: {}",
    "goal": "Reached goal #{}",
    "replay": "Has a replay",
    "bot": "Bot: {}",
    "identified": "Identified: {}",
    "duration_min": "Duration at least {} s",
    "duration_max": "Duration at most {} s",
    "events_min": "At least {} events",
    "events_max": "At most {} events",
}
NOT_FILTERABLE = (breakdowns.OTHER, breakdowns.NONE)  # folds and missing values


def dashboard_filters(params: Mapping[str, str]) -> dict[str, str]:
    """The filters the URL asks for, by the explorer's names, as the explorer reads them
    (a URL reduced to its path, true/false); RangeError naming the first bad one."""
    given = {name: params[name] for name in explorer.filter_names() if params.get(name)}
    query = explorer.explorer_query_parse(given, now=datetime.now(UTC))
    shown = query.params()
    return {name: shown[name] for name in explorer.filter_names() if name in shown}


def typed(filters: Mapping[str, str]) -> dict[str, Any]:
    """The filters with the explorer's types (booleans, whole numbers)."""
    return explorer.explorer_query_parse(filters, now=datetime.now(UTC)).filters


def filterable(name: str, value: object) -> bool:
    """Whether a row's value can become a filter (not a fold, a missing value, or longer
    than the explorer takes)."""
    return (
        name in explorer.filter_names()
        and isinstance(value, str)
        and bool(value.strip())
        and value not in NOT_FILTERABLE
        and len(value) <= explorer.MAX_TEXT
    )


@dataclass(frozen=True)
class Chip:
    """An active filter as the page says it ("Country is DE")."""

    name: str
    text: str
    value: str


def chips(filters: Mapping[str, str]) -> list[Chip]:
    """One chip per active filter, in the explorer's order."""
    found = []
    for name, value in filters.items():
        if name in PHRASES:
            text = PHRASES[name].format({"true": "yes", "false": "no"}.get(value, value))
        else:
            text = f"{dimensions.named(name).label} is {value}"
        found.append(Chip(name, text, value))
    return found


@dataclass(frozen=True)
class FilteredAnswer:
    """The dashboard's numbers under the filters (current and comparison period)."""

    filters: dict[str, str]
    kpis: Kpis
    previous: Kpis | None
    chart: dict[str, Any]
    breakdowns: dict[str, list[dict[str, Any]]]
    entry_pages: list[tuple[str, int]]
    counted: session_filter.Counted
    compared: session_filter.Counted | None
    sealed: bool = False  # KPIs and chart from the sealed counts of the one value

    @property
    def cut_days(self) -> int | None:
        """The days counted when the partition budget cut the period, else None."""
        return self.counted.days_read if self.counted.cut else None


def dashboard_filtered(
    *, site: Site, period: Period, filters: dict[str, str], metric: str = "visitors"
) -> FilteredAnswer:
    """The dashboard's numbers under these filters (dashboard_filters' output).

    One breakdown dimension on a value every bucket of the period (and its comparison)
    kept takes its KPIs and chart from the sealed per-bucket counts (`sealed_value`):
    exact over the whole period, whatever the partition budget. Everything else, and the
    breakdowns and entry pages in every case, is counted from the site_sessions rows
    within their partition budget."""
    values = typed(filters)
    counting = session_filter.sessions_counting(
        site_id=site.id, start=period.start, end=period.elapsed_end, filters=values
    )
    sealed = sealed_value(site=site, period=period, filters=filters, metric=metric)
    previous = period.comparison()
    comparing = None
    if previous is not None and sealed is None:  # sent before the period's reads are awaited
        comparing = session_filter.sessions_counting(
            site_id=site.id,
            start=previous.start,
            end=previous.elapsed_end,
            filters=values,
            kpis_only=True,
        )
    counted = counting()
    compared = comparing() if comparing is not None else None
    if sealed is not None:
        kpis, before, chart = sealed
    else:
        kpis = session_filter.kpis_count(counted.rows)
        before = session_filter.kpis_count(compared.rows) if compared is not None else None
        chart = session_filter.chart_data(period, counted, compared, metric)
    return FilteredAnswer(
        filters=filters,
        kpis=kpis,
        previous=before,
        chart=chart,
        breakdowns=session_filter.breakdown_counts(counted.rows, top=TOP),
        entry_pages=session_filter.entry_pages(counted.rows),
        counted=counted,
        compared=compared,
        sealed=sealed is not None,
    )


def sealed_value(
    *,
    site: Site,
    period: Period,
    filters: Mapping[str, str],
    metric: str,
) -> tuple[Kpis, Kpis | None, dict[str, Any]] | None:
    """A single breakdown filter's KPIs, its comparison's and the chart, from the sealed
    per-bucket counts of that value; None when there is more than one filter, it is not
    a breakdown dimension, or some bucket folded the value into "(other)"."""
    if len(filters) != 1:
        return None
    ((name, value),) = filters.items()
    if name not in breakdowns.names() or value in NOT_FILTERABLE:
        return None
    current = breakdown_kpis(site=site, period=period, dimension=name, value=value)
    if current is None:
        return None
    earlier = period.comparison()
    before = None
    if earlier is not None:
        before = breakdown_kpis(site=site, period=earlier, dimension=name, value=value)
        if before is None:
            return None
    chart = value_chart(period, current, before, metric=metric)
    kpis, previous = current.kpis, before.kpis if before is not None else None
    goals = site_goals(site.id)
    if goals:  # who reached a goal among this value's sessions (sealed per value, too)
        spans = [(period.start, period.elapsed_end)]
        if earlier is not None:
            spans.append((earlier.start, earlier.elapsed_end))
        reached = conversions.goal_visitors(
            site_id=site.id, goals=goals, spans=spans, dimension=name, value=value
        )
        kpis = replace(kpis, converting_visitors=reached[0])
        if previous is not None:
            previous = replace(previous, converting_visitors=reached[1])
    return kpis, previous, chart


def latest_sessions(
    *, site_id: uuid.UUID, period: Period, filters: Mapping[str, str]
) -> explorer.ExplorerPage:
    """The period's newest sessions matching the filters (the explorer's first page),
    each with its entry and exit URLs (kept with their query in user_sessions). Bots are
    left out, as from every number on the dashboard, unless the filters ask for them."""
    asked = {"bot": False, **typed(filters)}
    query = explorer.ExplorerQuery(start=period.start, end=period.elapsed_end, filters=asked)
    page = explorer.sessions_explore(site_id=site_id, query=query, limit=LATEST)
    statement = prepare(user_sessions.with_dimensions(user_sessions.SELECT_SESSION_ONE))
    futures = [
        cassandra_session().execute_async(statement, (site_id, s["user_key"], s["session_id"]))
        for s in page.sessions
    ]  # LATEST reads of one row each, at once
    for session, future in zip(page.sessions, futures, strict=True):
        summary = future.result().one() or {}
        session["entry_url"] = summary.get("entry_url") or session.get("entry_path")
        session["exit_url"] = summary.get("exit_url") or session.get("exit_path")
    return page


def dashboard_context(
    *, site: Site, period: Period, params: Mapping[str, str], latest: bool = True
) -> dict[str, Any]:
    """What the dashboard shows of its filters: the chips, the filtered answer (None
    without filters), the latest sessions (unless not `latest`) and a bad filter's
    message."""
    try:
        filters = dashboard_filters(params)
    except RangeError as exc:
        return {"filter_error": str(exc), "chips": [], "filtered": None, "latest": None}
    answer = None
    if filters:
        answer = dashboard_filtered(
            site=site, period=period, filters=filters, metric=params.get("metric") or ""
        )
    return {
        "filter_error": "",
        "chips": chips(filters),
        "filtered": answer,
        "latest": (
            latest_sessions(site_id=site.id, period=period, filters=filters) if latest else None
        ),
    }
