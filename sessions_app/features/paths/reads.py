"""Paths and transitions over a range: what the Paths and Transitions pages and APIs show.

Read from bucket_paths (domain/aggregates/paths.py): one (side, anchor) row per sealed day or
hour of the range, plus the hours not sealed yet, counted live from their raw rows as a
seal would (at most MAX_LIVE_HOURS, the latest). Counts add up across buckets, so the
range's paths are the sums. A path's last page decides its bucket: a path that leaves
the range is counted as far as the range goes, and its continuation after the range's
end shows as an exit. A path from a page counts only if that page's view is in the range
too (the counted hours): the paths the buckets carried from before it are subtracted, so
a Sankey column's continuing and leaving visits add up to its arrivals.
"""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from sessions_app.domain.aggregates.paths import (
    ENTRANCE,
    FROM,
    MAX_STEPS,
    OTHER,
    TO,
    Gram,
    Row,
    anchor_read,
    paths_merge,
)
from sessions_app.domain.aggregates.products import PATHS
from sessions_app.domain.aggregates.report import MAX_LIVE_HOURS, bucket_cover
from sessions_app.domain.aggregates.seal import hour_live
from sessions_app.features.web.params import iso, path_param
from sessions_app.features.web.periods import Period, capped, period_param
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import RangeError

MAX_DAYS = 92  # a range's buckets read at once (days, and the live hours)
ANCHOR_PARAMS = {FROM: "from_page", TO: "to_page"}  # `from`/`to` name the period's days
MAX_NODES = 8  # pages a Sankey step shows; the rest are "(other)"
TOP_PATHS = 20
EXIT = "(exit)"


@dataclass(frozen=True)
class PathQuery:
    """A range (read from `period`: its last MAX_DAYS days at most, `note` says when it
    was cut) and the page the paths start from (FROM) or end at (TO)."""

    start: datetime
    end: datetime
    side: str = FROM
    anchor: str = ENTRANCE
    period: Period | None = None
    note: str = ""

    def params(self) -> dict[str, str]:
        if self.period:
            values = self.period.params()
        else:
            values = {"start": iso(self.start.replace(microsecond=0)), "end": iso(self.end)}
        if self.anchor != ENTRANCE:
            values[ANCHOR_PARAMS[self.side]] = self.anchor
        return values


def _anchors(params: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The period's parameters and the anchor pages asked for: `from_page` / `to_page`,
    or an old link's `from` / `to` holding a page path or URL (a day is the period's)."""
    period = {name: str(params.get(name) or "") for name in params}  # a QueryDict's last
    chosen = {side: (params.get(name) or "").strip() for side, name in ANCHOR_PARAMS.items()}
    for side in (FROM, TO):
        value = (params.get(side) or "").strip()
        if value.startswith("/") or "://" in value:
            chosen[side] = chosen[side] or value
            period.pop(side)
    return period, chosen


def path_query_parse(
    params: Mapping[str, str], *, now: datetime, zone: ZoneInfo | None = None
) -> PathQuery:
    """The period every page reads (periods.py, in the site's `zone`; its last 92 days at
    most, an old start/end past that refused) and at most one of `from_page` /
    `to_page` (a page path or URL; neither: paths from the session start)."""
    asked, chosen = _anchors(params)
    period = period_param(asked, zone=zone or ZoneInfo("UTC"), now=now)
    start, end, note = capped(period, MAX_DAYS, "Paths cover")
    if chosen[FROM] and chosen[TO]:
        raise RangeError(TO, "give either from or to, not both")
    for side, value in chosen.items():
        if len(value) > 512:
            raise RangeError(side, "at most 512 characters")
        if value:
            return PathQuery(start, end, side, path_param(value), period, note)
    return PathQuery(start, end, period=period, note=note)


def page_query_parse(
    params: Mapping[str, str], *, now: datetime, zone: ZoneInfo | None = None
) -> PathQuery:
    """A transitions query: the period as for paths, and the required `page`."""
    page = (params.get("page") or "").strip()
    if not page:
        raise RangeError("page", "required: the page path whose transitions to show")
    if len(page) > 512:
        raise RangeError("page", "at most 512 characters")
    rest = {k: v for k, v in params.items() if k not in ANCHOR_PARAMS.values()}
    query = path_query_parse(_anchors(rest)[0], now=now, zone=zone)
    return PathQuery(query.start, query.end, FROM, path_param(page), query.period, query.note)


def range_row(*, site_id: uuid.UUID, query: PathQuery, side: str | None = None) -> tuple[Row, int]:
    """The (side, anchor) row of the whole range, and how many hours were counted live."""
    side = side or query.side
    wanted, live, shards = bucket_cover(site_id=site_id, start=query.start, end=query.end)
    rows = anchor_read(site_id=site_id, buckets=wanted, side=side, anchor=query.anchor)
    hours = live[-MAX_LIVE_HOURS:]
    for hour in hours:
        counted = hour_live(
            site_id=site_id, hour=hour, shards=shards.get(hour, 1), products=(PATHS,)
        )
        found = counted[PATHS.name]
        if (side, query.anchor) in found:
            rows.append(found[side, query.anchor])
    merged = paths_merge([{(side, query.anchor): r} for r in rows], cap=False)
    row = merged.get((side, query.anchor), Row())
    skipped = set(live) - set(hours)
    return _begun_within(row, timebuckets.floor(query.start, "hour"), skipped), len(hours)


def _begun_within(row: Row, start: datetime, skipped: set[datetime]) -> Row:
    """The row without the paths whose first page view is before `start` or in an hour
    not counted: their shorter paths are not in the range."""
    gone: Counter[Gram] = Counter()
    for (gram, first), n in row.carried.items():
        if first < start or first in skipped:
            gone[gram] += n
    grams = {g: n - gone[g] for g, n in row.grams.items() if n > gone[g]}
    return Row(grams, row.sources, row.dropped)


def _along(gram: Gram, side: str) -> Gram:
    """The path read away from the anchor (a TO path backwards)."""
    return gram if side == FROM else gram[::-1]


def sankey(row: Row, *, side: str, anchor: str) -> dict[str, Any]:
    """Steps of pages away from the anchor and the flows between them: each step's
    MAX_NODES busiest pages (the rest as "(other)"), and how many stopped at each node
    (exits going forward; for paths to a page, the sessions that entered there)."""
    grams = {_along(g, side): n for g, n in row.grams.items() if _along(g, side)[0] == anchor}
    arrivals: dict[int, Counter[str]] = defaultdict(Counter)
    for gram, n in grams.items():
        arrivals[len(gram) - 1][gram[-1]] += n
    if 0 not in arrivals:  # no one-page row: the entrance, or the paths to a page
        arrivals[0][anchor] = sum(n for g, n in grams.items() if len(g) == 2)
    shown = {
        step: {page for page, _ in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_NODES]}
        for step, c in arrivals.items()
    }

    def name(step: int, page: str) -> str:
        return page if page in shown.get(step, ()) else OTHER

    nodes: dict[tuple[int, str], dict[str, Any]] = {}
    for step, counts in arrivals.items():
        for page, n in counts.items():
            node = nodes.setdefault((step, name(step, page)), {"count": 0, "onward": 0})
            node["count"] += n
    links: Counter[tuple[int, str, str]] = Counter()
    for gram, n in grams.items():
        if len(gram) > 1:
            step = len(gram) - 1
            links[step - 1, name(step - 1, gram[-2]), name(step, gram[-1])] += n
            node = nodes.setdefault((step - 1, name(step - 1, gram[-2])), {"count": 0, "onward": 0})
            node["onward"] += n
    last = max(arrivals, default=0)
    steps = MAX_STEPS if anchor == ENTRANCE else MAX_STEPS - 1
    return {
        "side": side,
        "anchor": anchor,
        "nodes": [
            {
                "step": step,
                "page": page,
                "count": node["count"],
                # At the last step a path can show, whether it went on is unknown.
                "stopped": None if step >= steps else node["count"] - node["onward"],
            }
            for (step, page), node in sorted(
                nodes.items(), key=lambda kv: (kv[0][0], -kv[1]["count"])
            )
        ],
        "links": [
            {"step": step, "source": source, "target": target, "count": n}
            for (step, source, target), n in sorted(
                links.items(), key=lambda kv: (kv[0][0], -kv[1])
            )
        ],
        "steps": last,
    }


def top_paths(row: Row, *, side: str, anchor: str, top: int = TOP_PATHS) -> list[dict[str, Any]]:
    """The most common whole paths from (to) the anchor: those that stopped there (the
    visitor left; for paths to a page, it began at the session's entrance) and those
    MAX_STEPS pages long, with how many followed each exactly."""
    grams = {_along(g, side): n for g, n in row.grams.items() if _along(g, side)[0] == anchor}
    onward: Counter[Gram] = Counter()
    for gram, n in grams.items():
        onward[gram[:-1]] += n
    found: list[tuple[int, list[str]]] = []
    for gram, n in grams.items():
        pages = len([p for p in gram if p != ENTRANCE])
        if side == TO and gram[-1] != ENTRANCE and pages < MAX_STEPS:
            continue  # went back further: a longer path holds it
        if OTHER in gram:
            continue  # rare paths folded together by a bucket's cap
        whole = n if pages >= MAX_STEPS or side == TO else n - onward[gram]
        if whole > 0 and len(gram) > 1:
            shown = list(gram if side == FROM else gram[::-1])
            found.append((whole, shown))
    found.sort(key=lambda p: (-p[0], p[1]))
    return [{"pages": pages, "count": n} for n, pages in found[:top]]


def transitions(from_row: Row, to_row: Row, *, page: str) -> dict[str, Any]:
    """A page's views, where its visitors came from (pages, entrances by source) and
    where they went next (pages, exits), as in Matomo's Transitions."""
    views = from_row.grams.get((page,), 0)
    before = {g[0]: n for g, n in to_row.grams.items() if len(g) == 2 and g[1] == page}
    after = {g[1]: n for g, n in from_row.grams.items() if len(g) == 2 and g[0] == page}
    entrances = before.pop(ENTRANCE, 0)

    def ranked(counts: Mapping[str, int]) -> list[dict[str, Any]]:
        return [
            {"value": v, "count": n}
            for v, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        ]

    return {
        "page": page,
        "views": views,
        "previous_pages": ranked(before),
        "entrances": entrances,
        "entrance_sources": ranked(to_row.sources),
        "next_pages": ranked(after),
        "exits": max(0, views - sum(after.values())),
        "dropped": from_row.dropped + to_row.dropped,
    }


def paths_answer(site_id: uuid.UUID, query: PathQuery) -> dict[str, Any]:
    """A Sankey of the paths from (or to) the query's page and its most common whole
    paths (what the Paths page and /api/.../paths show)."""
    row, live = range_row(site_id=site_id, query=query)
    return {
        "query": query.params(),
        **sankey(row, side=query.side, anchor=query.anchor),
        "paths": top_paths(row, side=query.side, anchor=query.anchor),
        "dropped": row.dropped,
        "live_hours": live,
    }


def transitions_answer(site_id: uuid.UUID, query: PathQuery) -> dict[str, Any]:
    """Where the visitors of one page came from and went next (the Transitions page and API)."""
    from_row, live = range_row(site_id=site_id, query=query)
    to_row, _ = range_row(site_id=site_id, query=query, side=TO)
    return {
        "query": query.params(),
        **transitions(from_row, to_row, page=query.anchor),
        "live_hours": live,
    }
