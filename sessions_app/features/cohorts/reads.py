"""Retention cohorts, lifecycle and stickiness from the sealed user sets
(domain/aggregates/usersets.py; docs/retention.md), the numbers the pages, the API and the CSV
show.

Periods are UTC days, ISO weeks (from Monday) or calendar months: the sets are sealed per
UTC day, so a site's own zone is not applied here (the page says so). The sets are read
by features/cohorts/reader.py: a period's month row, else its weeks' and days' rows, else (a day
not rolled up yet, within LIVE_DAYS) its sealed hours.

"First" (a cohort's users, lifecycle's new users) means not in any set of the
LOOKBACK_MONTHS months before: a user last seen earlier than that counts as new.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.core.cache import cache
from django.db.models import Count, Max, Q, Sum
from pyroaring import BitMap

from sessions_app.domain.aggregates import usersets
from sessions_app.domain.aggregates.usersets import ACTIVE, Sets
from sessions_app.domain.goals.defs import site_goals
from sessions_app.features.cohorts.reader import LIVE_DAYS, LOOKBACK_MONTHS, Reader, reader_for
from sessions_app.features.web import periods
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import BucketState, ErasureRequest, Goal

UNITS = ("day", "week", "month")
MAX_PERIODS = 36  # cohorts (and lifecycle/stickiness rows) a query shows at most
MAX_NAME = 200
CACHE_SECONDS = 3600  # a report's answer, under a key that any change to its sets changes


@dataclass(frozen=True)
class Query:
    unit: str
    starts: list[datetime]  # the periods' starts (UTC), oldest first
    first_event: str  # "" = the first visit starts a cohort
    return_event: str  # "" = any visit is a return
    period: periods.Period
    note: str = ""
    goals: dict[str, str] = field(default_factory=dict)  # the site's goal sets: their names


def query_parse(
    params: Mapping[str, str],
    *,
    now: datetime,
    zone: Any,
    site_id: uuid.UUID | None = None,
    units: tuple[str, ...] = UNITS,
) -> Query:
    """The query the URL parameters ask for; RangeError naming the first bad one. An event
    "goal:<id>" is one of the site's goals (`site_id`; unchecked without it). The period's
    default is every page's; the unit's follows the period (default_unit), the first of
    `units` (a report's own) when that one is not among them."""
    period = periods.period_param(params, zone=zone, now=now)
    unit = params.get("unit") or default_unit(period)
    if not params.get("unit") and unit not in units:
        unit = units[0]
    if unit not in UNITS:
        raise RangeError("unit", f"one of {', '.join(UNITS)}")
    goals = goal_names(site_id) if site_id else {}
    names = {}
    for name in ("first_event", "return_event"):
        value = (params.get(name) or "").strip()
        if len(value) > MAX_NAME:
            raise RangeError(name, f"an event name of at most {MAX_NAME} characters")
        if site_id and value.startswith(usersets.GOAL) and value not in goals:
            raise RangeError(name, "no such goal on this site")
        names[name] = value
    starts = timebuckets.buckets_between(period.start, min(period.end, now), unit)
    note = ""
    if len(starts) > MAX_PERIODS:
        starts, note = starts[-MAX_PERIODS:], f"the last {MAX_PERIODS} {unit}s of the period"
    return Query(unit, starts, names["first_event"], names["return_event"], period, note, goals)


def default_unit(period: periods.Period) -> str:
    """Days for a range of up to two weeks (the default 7 days: seven daily cohorts),
    weeks up to half a year, months beyond."""
    days = (period.end - period.start).days
    return "day" if days <= 14 else "week" if days <= 183 else "month"


def goal_names(site_id: uuid.UUID) -> dict[str, str]:
    """The site's goals as the cohort pickers offer them: {"goal:<id>": its name}."""
    return {usersets.goal_set(g.id): g.name for g in site_goals(site_id)}


Report = Callable[..., dict[str, Any]]


def answer_key(site_id: uuid.UUID, query: Query, now: datetime) -> str | None:
    """What a report's answer depends on: the query, the hour, and every stored set it may
    read — each seal or late event of the range's days and months and of the hours it
    may read (their states' count, seals, versions, last seal), every finished erasure
    (it edits sets in place) and goal backfill; None while an erasure or a goal's
    backfill is under way (nothing cached). Three SQL reads: the erasures' and the
    states' aggregates (not over two years of hour states), the goals' rows."""
    finished = (ErasureRequest.DONE, ErasureRequest.FAILED)
    erasures = ErasureRequest.objects.filter(site_id=site_id).aggregate(
        n=Count("pk"), at=Max("finished_at"), running=Count("pk", filter=~Q(state__in=finished))
    )
    goals = sorted(
        Goal.objects.filter(site_id=site_id).values_list(
            "pk", "digest", "backfill_state", "exact_from"
        )
    )
    # A running erasure or goal backfill rewrites the sets.
    if erasures["running"] or any(g[2] in (Goal.QUEUED, Goal.RUNNING) for g in goals):
        return None
    first = timebuckets.floor(query.starts[0] if query.starts else now, "month")
    for _ in range(LOOKBACK_MONTHS):
        first = timebuckets.floor(first - timedelta(days=1), "month")
    end = timebuckets.next_start(query.starts[-1], query.unit) if query.starts else now
    # Hours are read only for days of the last LIVE_DAYS; an older hour's change reopens
    # its day and month (a new version) and reseals them.
    live_from = timebuckets.floor(now - timedelta(days=LIVE_DAYS), "day")
    states = BucketState.objects.filter(
        Q(granularity__in=("day", "month")) | Q(granularity="hour", bucket__gte=live_from),
        site_id=site_id,
        bucket__gte=first,
        bucket__lt=end,
    )
    found = (
        site_id,
        query.unit,
        query.starts,
        query.first_event,
        query.return_event,
        timebuckets.floor(now, "hour"),
        states.aggregate(n=Count("pk"), s=Sum("seals"), v=Sum("version"), at=Max("sealed_at")),
        erasures,
        goals,
    )
    return hashlib.sha256(repr(found).encode()).hexdigest()


def cached(name: str) -> Callable[[Report], Report]:
    """A report's answers kept CACHE_SECONDS under `answer_key` (a warm page or API call
    reads a few SQL aggregates instead of the sets; any change to them is a new key)."""

    def wrap(report: Report) -> Report:
        def answer(site_id: uuid.UUID, query: Query, *, now: datetime) -> dict[str, Any]:
            key = answer_key(site_id, query, now)
            found = cache.get(f"cohorts:{name}:{key}") if key else None
            if found is None:
                found = report(site_id, query, now=now)
                if key:
                    cache.set(f"cohorts:{name}:{key}", found, CACHE_SECONDS)
            return found

        answer.__doc__ = report.__doc__
        return answer

    return wrap


@cached("cohorts")
def cohorts(site_id: uuid.UUID, query: Query, *, now: datetime) -> dict[str, Any]:
    """The triangle: each period's cohort (its users' first visit, or first `first_event`)
    and how many of them returned (any visit, or `return_event`) 0..n periods later."""
    return triangle(reader_for(site_id, [query.first_event, query.return_event], now), query)


def triangle(reader: Reader, query: Query) -> dict[str, Any]:
    """The cohorts of `query` from the sets `reader` gives."""
    reader.prefetch(query.starts, query.unit, query.starts[0] if query.starts else None)
    sets = reader.periods(query.starts, query.unit)
    seen = reader.seen_before(query.starts[0], query.first_event) if query.starts else BitMap()
    rows = []
    for i, start in enumerate(query.starts):
        cohort = sets[i].users(query.first_event) - seen
        seen |= sets[i].users(query.first_event)
        counts = [
            cohort.intersection_cardinality(later.users(query.return_event)) for later in sets[i:]
        ]
        size = len(cohort)
        rows.append(
            {
                "start": start.isoformat(),
                "size": size,
                "counts": counts,
                "percents": [round(100 * n / size, 1) if size else None for n in counts],
            }
        )
    return {
        "unit": query.unit,
        "first_event": query.first_event,
        "return_event": query.return_event,
        "cohorts": rows,
        "average": _average(rows),
        "incomplete": sorted(d.isoformat() for d in reader.incomplete),
        "event_names": sorted(
            n for n in reader.seen_names - {ACTIVE} if not n.startswith(usersets.GOAL)
        ),
        "goals": query.goals,
        "note": query.note,
        "first_label": query.goals.get(query.first_event, query.first_event),
    }


def _average(rows: list[dict[str, Any]]) -> list[float | None]:
    """Each offset's share of returning users, over the cohorts that reached it (weighted
    by their sizes)."""
    width = max((len(r["counts"]) for r in rows), default=0)
    average: list[float | None] = []
    for k in range(width):
        reached = [r for r in rows if len(r["counts"]) > k]
        size = sum(r["size"] for r in reached)
        returned = sum(r["counts"][k] for r in reached)
        average.append(round(100 * returned / size, 1) if size else None)
    return average


def cell_users(
    site_id: uuid.UUID, query: Query, *, cohort: int, offset: int, now: datetime
) -> tuple[list[str], int]:
    """The first users (by number, at most usersets.MAX_KEYS_READ) of one cell: the
    cohort's users who returned `offset` periods later; (their keys, how many in all)."""
    if not 0 <= cohort < len(query.starts):
        raise RangeError("cohort", f"a cohort from 0 to {len(query.starts) - 1}")
    if not 0 <= offset < len(query.starts) - cohort:
        raise RangeError("offset", f"a period from 0 to {len(query.starts) - cohort - 1}")
    reader = Reader(site_id, [query.first_event, query.return_event], now)
    reader.prefetch(query.starts[: cohort + offset + 1], query.unit, query.starts[0])
    sets = reader.periods(query.starts[: cohort + offset + 1], query.unit)
    seen = reader.seen_before(query.starts[0], query.first_event)
    for earlier in sets[:cohort]:
        seen |= earlier.users(query.first_event)
    users = (sets[cohort].users(query.first_event) - seen) & sets[cohort + offset].users(
        query.return_event
    )
    keys = usersets.keys_of(site_id, users)
    return sorted(keys.values()), len(users)


@cached("lifecycle")
def lifecycle(site_id: uuid.UUID, query: Query, *, now: datetime) -> dict[str, Any]:
    """Each period's active users split into new (first visit), returning (active the
    period before too), resurrecting (back after a gap), and the dormant (active the
    period before, not in this one)."""
    reader = reader_for(site_id, [], now)
    if not query.starts:
        return {"unit": query.unit, "periods": [], "note": query.note}
    before = timebuckets.floor(query.starts[0] - timedelta(seconds=1), query.unit)
    reader.prefetch([before, *query.starts], query.unit, before)
    sets = reader.periods([before, *query.starts], query.unit)
    seen = reader.seen_before(before, ACTIVE) | sets[0].users()
    rows = []
    for previous, current, start in zip(sets, sets[1:], query.starts, strict=False):
        now_active, was_active = current.users(), previous.users()
        new = now_active - seen
        seen |= now_active
        returning = now_active & was_active
        rows.append(
            {
                "start": start.isoformat(),
                "new": len(new),
                "returning": len(returning),
                "resurrecting": len(now_active - was_active - new),
                "dormant": -len(was_active - now_active),
                "active": len(now_active),
            }
        )
    return {"unit": query.unit, "periods": rows, "note": query.note}


@cached("stickiness")
def stickiness(site_id: uuid.UUID, query: Query, *, now: datetime) -> dict[str, Any]:
    """For each week or month: how many of its active users were active on 1, 2, ... of
    its days."""
    if query.unit == "day":
        raise RangeError("unit", "week or month (stickiness counts the days of one)")
    reader = reader_for(site_id, [], now)
    rows: list[dict[str, Any]] = []
    days: dict[datetime, Sets] = {}
    if query.starts:
        end = timebuckets.next_start(query.starts[-1], query.unit)
        days = reader.days(query.starts[0], end)
    for start in query.starts:
        length = (timebuckets.next_start(start, query.unit) - start).days
        within = [s.users() for d, s in days.items() if start <= d < start + timedelta(length)]
        rows.append({"start": start.isoformat(), "days": _days_active(within, length)})
    width = max((len(r["days"]) for r in rows), default=0)
    total = [sum(r["days"][k] for r in rows if len(r["days"]) > k) for k in range(width)]
    return {"unit": query.unit, "periods": rows, "total": total, "note": query.note}


def _days_active(days: list[BitMap], length: int) -> list[int]:
    """How many users were active on exactly 1..length of these days ([0] is 1 day)."""
    if not days:
        return [0] * length
    numbers = np.concatenate([np.asarray(d.to_array(), dtype=np.uint64) for d in days])
    _, per_user = np.unique(numbers, return_counts=True)
    histogram = np.bincount(per_user, minlength=length + 1)
    return [int(n) for n in histogram[1 : length + 1]]


PROFILE_DAYS = 35  # the user profile's active days: the last five weeks


def user_periods(site_id: uuid.UUID, user_key: str, *, now: datetime) -> dict[str, Any]:
    """One user's cohort (the week and month of their first visit within the lookback)
    and active periods (months of the lookback, days of the last PROFILE_DAYS), from the
    sealed sets; nothing when the user was never sealed."""
    number = usersets.numbers_of(site_id, [user_key], assign=False).get(user_key)
    if number is None:
        return {}
    reader = Reader(site_id, [], now)
    this_month = timebuckets.floor(now, "month")
    first = this_month
    for _ in range(LOOKBACK_MONTHS):
        first = timebuckets.floor(first - timedelta(days=1), "month")
    months = timebuckets.buckets_between(first, timebuckets.next_start(now, "month"), "month")
    found = reader.periods(months, "month")
    active_months = [m for m, sets in zip(months, found, strict=True) if number in sets.users()]
    days_from = timebuckets.floor(now - timedelta(days=PROFILE_DAYS - 1), "day")
    recent = reader.days(days_from, timebuckets.next_start(now, "day"))
    active_days = sorted(d for d, sets in recent.items() if number in sets.users())
    first_day = None
    if active_months:
        month = active_months[0]
        days = reader.days(month, timebuckets.next_start(month, "month"))
        first_day = min((d for d, s in days.items() if number in s.users()), default=None)
    return {
        "first_day": first_day,
        "cohort_week": timebuckets.floor(first_day, "week") if first_day else None,
        "cohort_month": active_months[0] if active_months else None,
        "months": active_months,
        "days": active_days,
        "days_shown": PROFILE_DAYS,
    }
