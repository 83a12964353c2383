"""A funnel's result over a range: step counts, conversion, times, trend, breakdown, units.

Definitions (the brute force in tests/analysis/test_funnels.py states them the same way):
a unit (a user, or a session when counted per session) converts step k when it has
events e1 < ... < ek in order (time, then event id) matching steps 1..k, each within the
range, and — with a time window — ek no later than e1 + window; with the session window
all of them in one session. A unit's level is the most steps it completes, its start the
latest first-step event from which that level is reached, and its chain the earliest
matching events from that start (what the times between steps are measured on). Trend
days and breakdown values are the start's day and the start session's dimensions.

Evaluation per unit is ClickHouse's windowFunnel: one pass keeping, for every step, the
latest start that reached it; then one greedy pass from that start for the chain. The
parts come from features/funnels/scan.py: cached days, fanned-out days, live days.
"""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from django.conf import settings

from sessions_app.domain.goals.kinds import STEP_KINDS
from sessions_app.features.funnels.queue import fan_out
from sessions_app.features.funnels.scan import (
    DayPart,
    Match,
    cached_parts,
    day_compute,
    gc_paused,
    sealed_versions,
)
from sessions_app.features.funnels.spec import Funnel, funnel_compile
from sessions_app.features.funnels.table import (
    DaySummary,
    Outcomes,
    best,
    breakdown_counts,
    concat,
    newest_first,
    percentile_s,
    split_names,
    step_counts,
    step_gaps,
    trend,
)
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.core.ids import cassandra_order
from sessions_app.foundation.models import BucketState, FunnelVersion, Site

MAX_LIVE_DAYS = 7  # unsealed days scanned in a request; older ones wait ("pending")
TOP_VALUES = 10
OTHER = "(other)"


@dataclass
class Unit:
    """One user's (or session's) outcome: its level, start and chain."""

    key: str
    level: int
    chain: list[Match]  # the matched events, step 1 first

    @property
    def start(self) -> Match:
        return self.chain[0]


def _order(match: Match) -> tuple[int, tuple[int, bytes]]:
    return match[2], cassandra_order(uuid.UUID(str(match[3])))


def unit_outcome(key: str, events: list[Match], steps: int, window_ms: int | None) -> Unit | None:
    """The unit's level, start and chain over its matching events (already in order)."""
    latest: list[int | None] = [None] * steps  # index of the latest start reaching step i+1
    for index, event in enumerate(events):
        mask = event[4]
        for step in range(steps - 1, -1, -1):  # high to low: an event serves one step
            if not mask >> step & 1:
                continue
            if step == 0:
                latest[0] = index
                continue
            start = latest[step - 1]
            if start is None:
                continue
            held = latest[step]
            within = window_ms is None or event[2] - events[start][2] <= window_ms
            if within and (held is None or start > held):
                latest[step] = start
    level = 0  # a start that reached step i+1 reached step i: the first gap ends them
    while level < steps and latest[level] is not None:
        level += 1
    if not level:
        return None
    begin = latest[level - 1]
    assert begin is not None
    chain = [events[begin]]
    for event in events[begin + 1 :]:
        if len(chain) == level:
            break
        if event[4] >> len(chain) & 1 and (
            window_ms is None or event[2] - chain[0][2] <= window_ms
        ):
            chain.append(event)
    return Unit(str(key), level, chain)


def units_evaluate(funnel: Funnel, events: Iterable[Match]) -> list[Unit]:
    """Every unit that reached the first step; `events` in order (time, then event id)."""
    steps = len(funnel.matchers)
    window = int(funnel.window / timedelta(milliseconds=1)) if funnel.window else None
    groups: dict[tuple[str, str], list[Match]] = defaultdict(list)
    for event in events:
        user, session = event[0], event[1]
        unit = session if funnel.per_session_units else user
        groups[unit, session if funnel.session_window else ""].append(event)
    best: dict[str, Unit] = {}
    for (unit_key, _), found in groups.items():
        outcome = unit_outcome(unit_key, found, steps, window)
        if outcome is None:
            continue
        held = best.get(unit_key)
        if held is None or _better(outcome, held):
            best[unit_key] = outcome
    return list(best.values())


def _better(one: Unit, other: Unit) -> bool:
    """More steps, else the later start (by time; the event ids only on a tie)."""
    if one.level != other.level:
        return one.level > other.level
    if one.start[2] != other.start[2]:
        return one.start[2] > other.start[2]
    return _order(one.start) > _order(other.start)


@dataclass
class Result:
    outcomes: Outcomes = field(default_factory=lambda: Outcomes(1))  # one row per unit
    days_total: int = 0
    days_cached: int = 0
    days_pending: list[datetime] = field(default_factory=list)
    scanned: int = 0

    @property
    def units(self) -> list[Unit]:
        """Every unit with its chain (reads every day's details: tests, small ranges)."""
        return [unit_at(self.outcomes, i) for i in range(len(self.outcomes))]


def unit_at(table: Outcomes, row: int) -> Unit:
    """A row as a Unit: the chain's times, its first and last event's ids."""
    key, user, first_sid, first_id, last_sid = table.detail(row)
    level = int(table.level[row])
    chain: list[Match] = [[user, None, t, None, 0] for t in table.times[row, :level].tolist()]
    chain[0][1], chain[0][3], chain[-1][1] = first_sid, first_id, last_sid
    return Unit(str(key), level, chain)


def funnel_units(*, site: Site, version: FunnelVersion, start: datetime, end: datetime) -> Result:
    """Gather the range's day parts (cached, scanned inline, fanned out, live) and evaluate."""
    funnel = funnel_compile(version.definition)
    steps = len(funnel.matchers)
    days = timebuckets.buckets_between(
        timebuckets.floor(start, "day"), timebuckets.ceil(end, "day"), "day", limit=93
    )
    sealed = sealed_versions(site.id, days)
    whole = {d for d in days if start <= d and timebuckets.next_start(d, "day") <= end}
    digest = funnel.key  # the version's digest, and the goals its goal steps name
    parts = cached_parts(site_id=site.id, digest=digest, days=sealed, whole=whole, steps=steps)
    result = Result(days_total=len(days), days_cached=len(parts))
    cold = [d for d in days if d in sealed and d not in parts]
    if len(cold) > settings.FUNNEL_INLINE_DAYS:
        fan_out(site_id=site.id, version_id=version.id, digest=digest, days=cold)
        result.days_pending.extend(cold)
        cold = []
    live = [d for d in days if d not in sealed and _may_hold_events(site, d)]
    result.days_pending.extend(live[:-MAX_LIVE_DAYS])
    writes: list[Any] = []
    # The days' parts pile up, hundreds of thousands of small lists and none in a cycle:
    # a cyclic collection would walk them all, again and again.
    with gc_paused():
        for day in cold + live[-MAX_LIVE_DAYS:]:
            parts[day] = day_compute(
                site=site,
                funnel=funnel,
                digest=digest,
                day=day,
                summarize=day_summary,
                writes=writes,
            )
        result.scanned = sum(part.scanned for part in parts.values())
        result.outcomes = _evaluate(funnel, parts, whole, start, end)
    for write in writes:
        write.result()
    result.days_pending.sort()
    return result


def _evaluate(
    funnel: Funnel,
    parts: dict[datetime, DayPart],
    whole: set[datetime],
    start: datetime,
    end: datetime,
) -> Outcomes:
    """Every unit's best outcome over the parts: whole days' settled outcomes as they
    are, an open group's own outcome unless another day holds events of it, and the
    events of those groups and of partly covered days evaluated together."""
    steps = len(funnel.matchers)
    low, high = timebuckets.epoch_ms(start), timebuckets.epoch_ms(end)
    summaries: dict[datetime, DaySummary] = {
        day: part.summary
        for day, part in parts.items()
        if part.summary is not None and day in whole
    }
    partial = {
        day: [e for e in part.events if low <= e[2] < high]
        for day, part in parts.items()
        if day not in summaries
    }
    group_of = _grouping(funnel)
    sources: Counter[tuple[str, str]] = Counter()
    for held in summaries.values():
        sources.update(held.groups)
    for found in partial.values():
        sources.update({group_of(e) for e in found})
    events: list[Match] = []
    sessions: dict[str, list[str | None]] = {}
    tables: list[Outcomes] = []
    for day in sorted(parts):  # days in order: one ordered stream
        summary = summaries.get(day)
        if summary is None:
            events.extend(partial[day])
            sessions.update(parts[day].sessions)
            continue
        groups = summary.groups
        alone = [sources[groups[g]] == 1 for g in summary.provisional_group]
        tables += [summary.settled, summary.provisional.take(np.flatnonzero(alone))]
        for g, key in enumerate(groups):
            if sources[key] > 1:
                events.extend(summary.events(g))
        sessions.update(summary.dims)
    evaluated = Outcomes.from_units(units_evaluate(funnel, events), sessions, steps)
    return best(concat([*tables, evaluated], steps))


def day_summary(funnel: Funnel, part: DayPart) -> DaySummary:
    """Split a whole day's units. A unit whose steps cannot reach into another day —
    every session it has that day runs more than the inactivity gap from midnight (a
    session window), or every matching event lies more than the window from midnight —
    is settled by the day alone: its outcome is stored. The others keep their events,
    which a range evaluates together with the neighbouring days' (exact either way)."""
    day0 = timebuckets.epoch_ms(part.day)
    day1 = timebuckets.epoch_ms(timebuckets.next_start(part.day, "day"))
    steps, ms = len(funnel.matchers), timedelta(milliseconds=1)
    window = int(funnel.window / ms) if funnel.window else None
    margin = int(settings.SESSION_INACTIVITY / ms) if funnel.session_window else (window or 0)
    group_of = _grouping(funnel)
    groups: dict[tuple[str, str], list[Match]] = defaultdict(list)
    for event in part.events:
        groups[group_of(event)].append(event)
    settled: dict[str, Unit] = {}
    opened: list[tuple[str, str]] = []
    found_of: list[list[Match]] = []
    provisional: list[Unit] = []
    provisional_group: list[int] = []
    for (unit, session), found in groups.items():
        first, last = (
            part.extents.get(session, [found[0][2], found[-1][2]])
            if funnel.session_window
            else [found[0][2], found[-1][2]]
        )
        outcome = unit_outcome(unit, found, steps, window)
        if first - day0 < margin or day1 - last <= margin:
            if outcome is not None:
                provisional.append(outcome)
                provisional_group.append(len(opened))
            opened.append((unit, session))
            found_of.append(found)
        elif outcome is not None and (unit not in settled or _better(outcome, settled[unit])):
            settled[unit] = outcome
    wanted = {e[1] for found in found_of for e in found}
    return DaySummary(
        settled=Outcomes.from_units(list(settled.values()), part.sessions, steps),
        groups=opened,
        provisional=Outcomes.from_units(provisional, part.sessions, steps),
        provisional_group=provisional_group,
        dims={sid: dims for sid, dims in part.sessions.items() if sid in wanted},
        found=found_of,
    )


def _grouping(funnel: Funnel) -> Callable[[Match], tuple[str, str]]:
    """An event's group: its unit (user or session), and its session with a session
    window (the steps of one group are evaluated together)."""
    unit = 1 if funnel.per_session_units else 0
    if funnel.session_window:
        return lambda e: (e[unit], e[1])
    return lambda e: (e[unit], "")


def _may_hold_events(site: Site, day: datetime) -> bool:
    """An unsealed day has events, or may still get them: every event opens its hour's
    state, so a settled day without one had none (nothing to scan)."""
    end = timebuckets.next_start(day, "day")
    if datetime.now(UTC) < end + settings.ALLOWED_LATENESS:
        return True
    return BucketState.objects.filter(
        site=site, granularity="hour", bucket__gte=day, bucket__lt=end
    ).exists()


def funnel_summary(
    definition: dict[str, Any], result: Result, *, breakdown: str | None
) -> dict[str, Any]:
    """Per step: count, conversion from the first and the previous step, median and p90
    seconds from the previous step; the trend per start day; the breakdown if asked."""
    steps = definition["steps"]
    table = result.outcomes
    reached = step_counts(table)
    shown = []
    for i, step in enumerate(steps):
        gaps = step_gaps(table, i) if i else np.zeros(0, np.int64)
        shown.append(
            {
                "step": i + 1,
                "label": step.get("label") or STEP_KINDS[step["kind"]].label(step),
                "count": reached[i],
                "dropped": reached[i] - (reached[i + 1] if i + 1 < len(steps) else reached[i]),
                "from_first": _rate(reached[i], reached[0]),
                "from_previous": _rate(reached[i], reached[i - 1] if i else reached[0]),
                "median_s": percentile_s(gaps, 0.5),
                "p90_s": percentile_s(gaps, 0.9),
            }
        )
    answer: dict[str, Any] = {
        "steps": shown,
        "trend": [
            {"day": d, "entered": n, "converted": c, "rate": round(c / n, 4)}
            for d, n, c in trend(table)
        ],
        "days": {
            "total": result.days_total,
            "cached": result.days_cached,
            "pending": [d.date().isoformat() for d in result.days_pending],
        },
        "events_scanned": result.scanned,
    }
    if breakdown:
        answer["breakdown"] = _breakdown(result, breakdown, len(steps))
    return answer


def _rate(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def _breakdown(result: Result, dimension: str, steps: int) -> list[dict[str, Any]]:
    names = split_names()
    if dimension not in names:
        raise RangeError("breakdown", f"one of {', '.join(names)}")
    counts = breakdown_counts(result.outcomes, names.index(dimension))
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[0]))
    rows = ranked[:TOP_VALUES]
    if len(ranked) > TOP_VALUES:
        rest = [sum(c[i] for _, c in ranked[TOP_VALUES:]) for i in range(steps)]
        rows.append((OTHER, rest))
    return [
        {"value": v, "counts": c, "rate": round(c[-1] / c[0], 4) if c[0] else 0.0} for v, c in rows
    ]


def units_page(
    result: Result, *, step: int, outcome: str, offset: int, limit: int
) -> tuple[list[dict[str, Any]], int | None]:
    """The units that reached `step` (1-based) or dropped off after it, newest start
    first: each with the session to open (its last matched event's) and its level."""
    if outcome not in ("reached", "dropped"):
        raise RangeError("outcome", "reached or dropped")
    table = result.outcomes
    levels = table.level
    mask = (levels >= step) if outcome == "reached" else (levels == step)
    chosen = newest_first(table, np.flatnonzero(mask))
    units = [unit_at(table, int(row)) for row in chosen[offset : offset + limit]]
    rows = [
        {
            "unit": u.key,
            "user_key": u.chain[-1][0],
            "session_id": u.chain[-1][1],
            "started_at": timebuckets.from_epoch_ms(u.start[2]),
            "level": u.level,
            "steps_at": [timebuckets.from_epoch_ms(e[2]) for e in u.chain],
            "steps_ms": [e[2] for e in u.chain],
        }
        for u in units
    ]
    following = offset + limit if offset + limit < len(chosen) else None
    return rows, following
