"""Web vitals over a period: p75 cards, a trend per metric, pages by worst p75, a page's
elements to fix (the Performance page, its API and CSV read these).

Sealed buckets come from bucket_vitals (the largest sealed days inside each bucket of the
period's chart, else sealed hours: `report.range_cover`), the unsealed hours are counted
live from their raw rows (the last MAX_LIVE_HOURS of them), so the cards are the merge
of the trend's buckets. Unfiltered reads take one row a bucket (level 0: the site;
level 1: a page); a device, country or browser filter reads the combinations (level 2)
and keeps the matching ones. Quantiles come from the merged sketches (within 1 %).
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sessions_app.domain.aggregates import vitals
from sessions_app.domain.aggregates.report import MAX_LIVE_HOURS, local_edges, range_cover
from sessions_app.domain.aggregates.vitals import METRICS, Key
from sessions_app.domain.aggregates.vitals_packed import (
    Measured,
    measured_merge,
    measured_of,
    packed_quantile,
)
from sessions_app.domain.aggregates.vitals_rows import level_futures, level_rows, live_counted
from sessions_app.features.web.periods import Period
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import BucketState

FILTERS = ("device", "country", "browser")  # the dashboard's names (features/analysis/dashboard.py)
MAX_FILTER = 64
MAX_PAGE = 2_048
MAX_PAGES_SHOWN = 200
SORTS = tuple(m.name for m in METRICS)
Q = 0.75


def filters_parse(params: Mapping[str, str]) -> dict[str, str]:
    """The device, country and browser the URL asks for; RangeError naming a bad one."""
    found = {}
    for name in FILTERS:
        value = params.get(name)
        if value is None or value == "":
            continue
        if len(value) > MAX_FILTER or not value.strip():
            raise RangeError(name, f"at most {MAX_FILTER} characters, not blank")
        found[name] = value
    return found


def page_parse(params: Mapping[str, str]) -> str:
    page = params.get("page") or ""
    if not page.startswith("/") or len(page) > MAX_PAGE:
        raise RangeError("page", f"a page path starting with / (at most {MAX_PAGE} characters)")
    return page


def sort_parse(params: Mapping[str, str]) -> str:
    sort = params.get("sort") or "lcp"
    if sort not in SORTS:
        raise RangeError("sort", f"one of {', '.join(SORTS)}")
    return sort


@dataclass
class Ranged:
    """A period's rows per chart bucket, as merged (`key` of each: page or SITE)."""

    edges: list[datetime]
    buckets: list[dict[str, Measured]] = field(default_factory=list)  # page (or ""): merged
    live_hours: int = 0

    def total(self) -> dict[str, Measured]:
        """Every bucket's rows merged."""
        gathered: dict[str, list[Measured]] = {}
        for part in self.buckets:
            for page, cell in part.items():
                gathered.setdefault(page, []).append(cell)
        return {page: measured_merge(cells) for page, cells in gathered.items()}


@dataclass(frozen=True)
class Span:
    """A period to read, as chart buckets: [start, end) in the zone's `grain`."""

    start: datetime
    end: datetime
    zone: Any
    grain: str

    def edges(self) -> list[datetime]:
        try:
            return local_edges(self.start, self.end, self.zone, self.grain)
        except RangeError:  # a half-hour zone: answered in UTC, as the dashboard does
            return local_edges(self.start, self.end, UTC, self.grain)


def _states(
    site_id: uuid.UUID, start: datetime, end: datetime
) -> tuple[dict[tuple[str, datetime], str], set[tuple[str, datetime]], dict[datetime, int]]:
    known: dict[tuple[str, datetime], str] = {}
    shards: dict[datetime, int] = {}
    states = BucketState.objects.filter(site_id=site_id, bucket__gte=start, bucket__lt=end)
    for g, b, state, used in states.values_list("granularity", "bucket", "state", "shards"):
        known[g, timebuckets.as_utc(b)] = state
        if g == "hour":
            shards[timebuckets.as_utc(b)] = used
    return known, {k for k, s in known.items() if s == BucketState.SEALED}, shards


def _matches(key: Key, filters: Mapping[str, str]) -> bool:
    return all(key[1 + FILTERS.index(name)] == value for name, value in filters.items())


def ranged(
    *,
    site_id: uuid.UUID,
    start: datetime,
    end: datetime,
    zone: Any,
    grain: str,
    filters: Mapping[str, str],
    by_page: bool,
    page: str | None = None,
) -> Ranged:
    """The period's vitals per chart bucket: the site's (by_page False) or each page's."""
    span = Span(start, end, zone, grain)
    return spans_read(site_id=site_id, spans=[span], filters=filters, by_page=by_page, page=page)[0]


def spans_read(
    *,
    site_id: uuid.UUID,
    spans: list[Span],
    filters: Mapping[str, str],
    by_page: bool,
    page: str | None = None,
) -> list[Ranged]:
    """Each span's vitals per chart bucket, read together: one query for the bucket
    states of them all, then every stored partition's query in flight at once (one a
    partition: `range_cover`'s sealed days, else sealed hours), the live hours counted
    meanwhile, and the rows decoded as they come (sketches stay packed arrays)."""
    edges = [span.edges() for span in spans]
    known, sealed, shards = _states(site_id, min(e[0] for e in edges), max(e[-1] for e in edges))
    now = datetime.now(UTC)
    units: list[list[tuple[str, datetime]]] = []  # per chart bucket of every span
    owner: list[int] = []  # the span of each chart bucket
    live: list[tuple[int, datetime]] = []  # (chart bucket, hour)
    for n, (span, cut) in enumerate(zip(spans, edges, strict=True)):
        for low, high in itertools.pairwise(cut):
            wanted, hours = range_cover(
                max(low, span.start), min(high, span.end), sealed, known, now
            )
            live.extend((len(units), h) for h in hours)
            units.append(wanted)
            owner.append(n)
    level = 2 if filters else (1 if by_page else 0)
    flat = [unit for wanted in units for unit in wanted]
    futures = iter(level_futures(site_id=site_id, buckets=flat, level=level, page=page))
    gathered: list[dict[str, list[Measured]]] = [{} for _ in units]
    counted: list[int] = [0 for _ in spans]
    for i, hour in _latest(live, owner):
        stored = live_counted(site_id=site_id, hour=hour, shards=shards.get(hour, 1))
        found = [
            (key, measured_of(cell))
            for (lv, key), cell in stored.items()
            if lv == level and (page is None or key[0] == page)
        ]
        _add(gathered[i], found, filters, by_page)
        counted[owner[i]] += 1
    for i, wanted in enumerate(units):
        for _ in wanted:
            _add(gathered[i], level_rows(next(futures)), filters, by_page)
    merged = [{k: measured_merge(cells) for k, cells in part.items()} for part in gathered]
    return [
        Ranged(
            edges=cut,
            buckets=[b for b, o in zip(merged, owner, strict=True) if o == n],
            live_hours=counted[n],
        )
        for n, cut in enumerate(edges)
    ]


def _latest(live: list[tuple[int, datetime]], owner: list[int]) -> list[tuple[int, datetime]]:
    """The live hours counted: each span's last MAX_LIVE_HOURS."""
    kept: list[tuple[int, datetime]] = []
    for n in sorted(set(owner)):
        kept.extend([(i, h) for i, h in live if owner[i] == n][-MAX_LIVE_HOURS:])
    return kept


def _add(
    into: dict[str, list[Measured]],
    rows: Iterable[tuple[Key, Measured]],
    filters: Mapping[str, str],
    by_page: bool,
) -> None:
    """Gather the matching rows by page (or all as ""), to be merged at once."""
    for key, cell in rows:
        if not filters or _matches(key, filters):
            into.setdefault(key[0] if by_page else "", []).append(cell)


# --- what the page, the API and the CSV show -------------------------------------------------
def metric_summary(cell: Measured | None, before: Measured | None = None) -> list[dict[str, Any]]:
    """Each metric's p75, how many measured, its good / needs improvement / poor shares,
    the p75 before and the change."""
    out = []
    for metric in METRICS:
        ratings = (cell.ratings.get(metric.name) if cell else None) or [0, 0, 0]
        n = sum(ratings)
        p75 = packed_quantile(cell.sketches.get(metric.name), Q) if cell else None
        old = packed_quantile(before.sketches.get(metric.name), Q) if before else None
        out.append(
            {
                "name": metric.name,
                "title": metric.title,
                "unit": metric.unit,
                "good_max": metric.good,
                "poor_above": metric.poor,
                "p75": _round(metric, p75),
                "n": n,
                "rating": None
                if p75 is None
                else ("good", "ni", "poor")[vitals.rating(metric, p75)],
                "good": ratings[0] / n if n else None,
                "ni": ratings[1] / n if n else None,
                "poor": ratings[2] / n if n else None,
                "previous_p75": _round(metric, old),
                "change": (p75 - old) / old if p75 is not None and old else None,
            }
        )
    return out


def _round(metric: vitals.Metric, value: float | None) -> float | None:
    if value is None:
        return None
    return round(value, 3) if metric.unit == "" else round(value)


def summary_answer(
    *, site_id: uuid.UUID, period: Period, filters: Mapping[str, str]
) -> dict[str, Any]:
    """The cards (with the comparison period's p75) and the trend per metric; the
    comparison period is read together with the period."""
    spans = [Span(period.start, period.end, period.zone, period.grain)]
    compared = period.comparison()
    if compared is not None:
        spans.append(Span(compared.start, compared.end, compared.zone, compared.grain))
    current, *earlier = spans_read(site_id=site_id, spans=spans, filters=filters, by_page=False)
    before_cell = earlier[0].total().get("") if earlier else None
    trend = {
        m.name: [
            _round(m, packed_quantile(b[""].sketches.get(m.name), Q)) if "" in b else None
            for b in current.buckets
        ]
        for m in METRICS
    }
    return {
        "metrics": metric_summary(current.total().get(""), before_cell),
        "trend": {
            "grain": period.grain,
            "zone": str(period.zone),
            "buckets": [_iso(e) for e in current.edges[:-1]],
            "series": trend,
        },
        "live_hours": current.live_hours,
        "filters": dict(filters),
    }


def pages_answer(
    *, site_id: uuid.UUID, period: Period, filters: Mapping[str, str], sort: str
) -> dict[str, Any]:
    """Pages by their p75 of `sort`, worst first (those without it last), at most
    MAX_PAGES_SHOWN; each with every metric's p75 and rating."""
    found = ranged(
        site_id=site_id,
        start=period.start,
        end=period.end,
        zone=period.zone,
        grain=period.grain,
        filters=filters,
        by_page=True,
    )
    rows = []
    for page, cell in found.total().items():
        metrics = {m["name"]: m for m in metric_summary(cell)}
        rows.append({"page": page, "n": max(m["n"] for m in metrics.values()), "metrics": metrics})
    rows.sort(
        key=lambda r: (
            r["metrics"][sort]["p75"] is None,
            -(r["metrics"][sort]["p75"] or 0),
            r["page"],
        )
    )
    return {
        "pages": rows[:MAX_PAGES_SHOWN],
        "more": max(0, len(rows) - MAX_PAGES_SHOWN),
        "sort": sort,
        "live_hours": found.live_hours,
        "filters": dict(filters),
    }


def page_answer(
    *, site_id: uuid.UUID, period: Period, filters: Mapping[str, str], page: str
) -> dict[str, Any]:
    """One page's cards and its worst elements per metric (LCP, INP, CLS)."""
    found = ranged(
        site_id=site_id,
        start=period.start,
        end=period.end,
        zone=period.zone,
        grain=period.grain,
        filters=filters,
        by_page=True,
        page=page,
    )
    cell = found.total().get(page)
    elements = {}
    for name in vitals.ELEMENT_OF:
        listed = vitals.worst(cell.elements.get(name, {})) if cell else []
        elements[name] = [
            {"element": label, "times": int(n), "poor": int(poor), "mean": round(total / n, 3)}
            for label, (n, poor, total) in listed
        ]
    return {
        "page": page,
        "metrics": metric_summary(cell),
        "elements": elements,
        "live_hours": found.live_hours,
        "filters": dict(filters),
    }


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
