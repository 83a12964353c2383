"""What the dashboard and the report API show for a period: its buckets in the site's
zone, its KPIs against the comparison period, the cards and the chart data
(domain/aggregates/report.py counts; this module picks the period and shapes the answer)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sessions_app.domain.aggregates import report, sealed_filter, totals
from sessions_app.domain.aggregates.breakdowns import entry_kpis
from sessions_app.domain.aggregates.kpis import CHARTED, Kpis, kpi_cards, kpi_value
from sessions_app.domain.goals.defs import conversion_label, site_goals
from sessions_app.features.analysis import conversions
from sessions_app.features.web.periods import DEFAULT_PRESET, Period, period_param, site_zone
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Site

UTC_NOTE = (
    "{zone} is a half-hour offset from UTC: days are answered from UTC hour buckets, so "
    "this range is shown in UTC"
)


def site_period(
    params: Mapping[str, str], *, site: Site, now: datetime, default: str = DEFAULT_PRESET
) -> tuple[Period, str]:
    """Return the period the URL asks for in the site's zone, and a note when the zone's
    day edges are not whole UTC hours (a half-hour zone): then the period is in UTC."""
    zone = site_zone(getattr(site, "time_zone", "UTC"))
    period = period_param(params, zone=zone, now=now, default=default)
    try:
        report.local_edges(period.start, period.end, zone, "day")
    except RangeError:
        utc = site_zone("UTC")
        return period_param(params, zone=utc, now=now, default=default), UTC_NOTE.format(zone=zone)
    return period, ""


@dataclass(frozen=True)
class PeriodReport:
    """A period's report, its comparison's (None when off), their KPIs, and which goals
    the conversion rate counts (None: the site has none, no conversion rate is shown)."""

    period: Period
    current: dict[str, Any]
    comparison: dict[str, Any] | None
    kpis: Kpis
    previous: Kpis | None
    conversion: str | None = None

    def cards(self) -> list[dict[str, Any]]:
        return kpi_cards(self.kpis, self.previous, conversion=self.conversion)


def period_report(
    *,
    site: Site,
    period: Period,
    grain: str | None = None,
    breakdown: bool = True,
    conversion: bool = True,
) -> PeriodReport:
    """Count a period (by its grain, or `grain`) and its comparison's elapsed part; its
    breakdowns unless `breakdown` is false, its conversion rate (the goal counts' reads)
    unless `conversion` is false (a page showing neither)."""
    width = grain or period.grain
    # Both reports' stored rows are asked for before either is waited for.
    current_begun = report.site_report_begin(
        site_id=site.id,
        shards=site.event_shards,
        start=period.start,
        end=period.end,
        width=width,
        zone=period.zone,
        breakdown=breakdown,
    )
    before = period.comparison()
    comparison_begun = None
    if before is not None:
        comparison_begun = report.site_report_begin(
            site_id=site.id,
            shards=site.event_shards,
            start=before.start,
            end=before.end,
            width=width,
            zone=before.zone,
            cut=before.elapsed_end,
            breakdown=False,
        )
    current = current_begun()
    comparison = comparison_begun() if comparison_begun is not None else None
    goals = site_goals(site.id) if conversion else []
    kpis, previous = current["kpis"], comparison["kpis"] if comparison else None
    if goals:  # the conversion rate: who reached a goal, over what the KPIs count
        spans = [(current["start"], current["end"])]  # the report's edges: whole buckets
        if before is not None and comparison is not None:
            spans.append((comparison["start"], min(comparison["end"], before.elapsed_end)))
        reached = conversions.goal_visitors(site_id=site.id, goals=goals, spans=spans)
        kpis = replace(kpis, converting_visitors=reached[0])
        if previous is not None:
            previous = replace(previous, converting_visitors=reached[1])
    return PeriodReport(period, current, comparison, kpis, previous, conversion_label(goals))


MOST_VIEWED = 15  # pages Transitions and Heatmaps offer before one is chosen


def most_viewed(*, site: Site, period: Period) -> list[tuple[str, int]]:
    """The period's most viewed pages and their page views (the buckets' top pages added
    up, recent hours counted live): where Transitions and Heatmaps start."""
    found = report.site_report(
        site_id=site.id,
        shards=site.event_shards,
        start=period.start,
        end=period.end,
        width=period.grain,
        zone=period.zone,
        cut=period.elapsed_end,
        breakdown=False,
    )
    return found["totals"].top_pages[:MOST_VIEWED]


def _local(bucket: datetime, period: Period) -> str:
    return bucket.astimezone(period.zone).isoformat()


def _series(values: list[Kpis | None]) -> dict[str, list[float | None]]:
    return {key: [None if k is None else kpi_value(k, key) for k in values] for key in CHARTED}


def chart_data(result: PeriodReport, *, metric: str) -> dict[str, Any]:
    """The chart's data island: every KPI per bucket in the site's
    zone, each bucket's state, and the comparison index-aligned (null past its end)."""
    period, rows = result.period, result.current["buckets"]
    values = [
        None if r.state in ("future", "pending") else totals.kpis_of(r.aggregates) for r in rows
    ]
    comparison = None
    if result.comparison is not None:
        before = result.comparison["buckets"][: len(rows)]
        shown = [
            None if r.state in ("future", "pending") else totals.kpis_of(r.aggregates)
            for r in before
        ]
        missing = len(rows) - len(before)
        comparison = {
            "buckets": [_local(r.bucket, period) for r in before] + [None] * missing,
            "series": _series(shown + [None] * missing),
        }
    return {
        "grain": result.current["width"],
        "zone": str(period.zone),
        "metric": metric,
        "metrics": CHARTED,
        "buckets": [_local(r.bucket, period) for r in rows],
        "states": [r.state for r in rows],
        "partial": period.in_progress([r.bucket for r in rows]),
        "series": _series(values),
        "comparison": comparison,
    }


@dataclass(frozen=True)
class ValueKpis:
    """One breakdown value's KPIs over a period, and per chart bucket (its UTC start)."""

    kpis: Kpis
    starts: list[datetime]
    series: dict[str, list[float | None]]


def breakdown_kpis(*, site: Site, period: Period, dimension: str, value: str) -> ValueKpis | None:
    """One breakdown value's KPIs over a period's elapsed part and its chart series per
    bucket, from the sealed per-bucket counts (unsealed hours counted live); None when
    some bucket did not keep the value (folded into "(other)"): then site_sessions must
    answer."""
    found = sealed_filter.value_report(
        site_id=site.id,
        shards=site.event_shards,
        start=period.start,
        end=period.end,
        width=period.grain,
        zone=period.zone,
        cut=period.elapsed_end,
        dimension=dimension,
        value=value,
    )
    if found is None:
        return None
    buckets, total = found
    shown = [None if start >= period.elapsed_end else entry_kpis(entry) for start, entry in buckets]
    return ValueKpis(entry_kpis(total), [start for start, _ in buckets], _series(shown))


def value_chart(
    period: Period,
    current: ValueKpis,
    previous: ValueKpis | None,
    *,
    metric: str,
) -> dict[str, Any]:
    """The chart's data island of one breakdown value: its buckets are the
    report's (`value_report` adds up the same stored buckets), each sealed or counted
    live, the bucket holding now "live", later ones "future"."""
    ends = [*current.starts[1:], period.end]
    states = [
        "future"
        if start >= period.elapsed_end
        else "live"
        if end > period.elapsed_end
        else "sealed"
        for start, end in zip(current.starts, ends, strict=True)
    ]
    comparison = None
    if previous is not None:
        size = len(current.starts)
        missing = max(0, size - len(previous.starts))
        comparison = {
            "buckets": [_local(s, period) for s in previous.starts[:size]] + [None] * missing,
            "series": {k: v[:size] + [None] * missing for k, v in previous.series.items()},
        }
    return {
        "grain": period.grain,
        "zone": str(period.zone),
        "metric": metric if metric in CHARTED else "visitors",
        "metrics": CHARTED,
        "buckets": [_local(s, period) for s in current.starts],
        "states": states,
        "partial": period.in_progress(current.starts),
        "series": current.series,
        "comparison": comparison,
    }
