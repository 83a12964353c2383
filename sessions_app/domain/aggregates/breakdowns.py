"""Breakdowns: sessions, users and conversions per source, medium, campaign, country,
device, browser, OS, entry page and exit page, for each bucket of a site.

An hour is counted once, when it seals, from the site_sessions rows of the sessions
that started in it (one slice of each of its day's shard partitions, rows as the
sessions stood then); a day merges its hours and a month its days (counts add up,
users from merged sketches). Live hours are counted the same way on read. Bots are
left out, as in every aggregate.
"""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import orjson

from sessions_app.domain.aggregates.kpis import Kpis, duration_slot, slots_median, slots_merge
from sessions_app.domain.aggregates.sketch import (
    Sketch,
    sketch_bytes,
    sketch_estimate,
    sketch_of,
    sketch_union,
)
from sessions_app.domain.aggregates.stored import bucket_overwrite
from sessions_app.foundation import dimensions, sources
from sessions_app.foundation.core.cql import prepare, read_begin
from sessions_app.foundation.tables import bucket_breakdowns

STORED_TOP = 50  # values kept per dimension and bucket; the rest are "(other)"
OTHER = "(other)"
NONE = "(none)"  # a session without the value (no campaign, an unknown country)
SOURCE = "source"


@dataclass
class Entry:
    """One value's numbers; `keys` (user keys) only while an hour is being counted.

    The KPI counters of its visits (domain/aggregates/kpis.py): page views, one-page visits,
    duration sum and sketch; `complete` is False for a row stored before they were.
    """

    sessions: int = 0
    conversions: int = 0
    users: int = 0
    sketch: Sketch = b""
    keys: set[str] = field(default_factory=set)
    pageviews: int = 0
    bounces: int = 0
    duration_sum: int = 0
    slots: dict[int, int] = field(default_factory=dict)
    complete: bool = True


def entries_total(entries: list[Entry], *, keys: set[str] | None = None) -> Entry:
    """Add up entries (one value's in several buckets, or several values folded): counts
    summed, duration slots added once, users exact from `keys` when given, else the
    estimate of their sketches' union (kept in memory: compressed only when written)."""
    if len(entries) == 1 and keys is None:
        return entries[0]
    sketch = sketch_union(e.sketch for e in entries)
    return Entry(
        sessions=sum(e.sessions for e in entries),
        conversions=sum(e.conversions for e in entries),
        users=len(keys) if keys is not None else sketch_estimate(sketch),
        sketch=sketch,
        keys=keys if keys is not None else set(),
        pageviews=sum(e.pageviews for e in entries),
        bounces=sum(e.bounces for e in entries),
        duration_sum=sum(e.duration_sum for e in entries),
        slots=slots_merge(e.slots for e in entries),
        complete=all(e.complete for e in entries),
    )


def entry_kpis(entry: Entry) -> Kpis:
    """Return the KPIs of one value's visits."""
    return Kpis(
        visitors=entry.users,
        visits=entry.sessions,
        pageviews=entry.pageviews,
        bounces=entry.bounces,
        duration_seconds_sum=float(entry.duration_sum),
        duration_median=slots_median(entry.slots),
        conversions=entry.conversions,
    )


Breakdown = dict[str, dict[str, Entry]]  # dimension -> value -> entry


def names() -> dict[str, str]:
    """Each dimension that breaks down (foundation/dimensions.py): the site_sessions column
    it counts, by its name."""
    return {d.name: d.column for d in dimensions.breakdowns()}


def breakdown_count(rows: Iterable[dict[str, Any]]) -> Breakdown:
    """Count one hour's human sessions per dimension value (users exact), top values only.

    Each session's numbers are taken once; each dimension groups the sessions by value
    and adds up each group's numbers at once (no entry updated per session)."""
    humans = [row for row in rows if not row["is_bot"]]
    visits = [
        (
            row["user_key"],
            bool(row["converted"]),
            row["pageview_count"] or 0,
            row["duration_s"] or 0,
        )
        for row in humans
    ]
    slots = [duration_slot(duration) for *_, duration in visits]
    counted: Breakdown = {}
    whole: Entry | None = None  # every session's: a dimension with one value in the hour
    for name, column in names().items():
        values = [row[column] or NONE for row in humans]
        if name == SOURCE:  # each distinct value spelt once, not once a session
            spelt = {value: _spelt(value) for value in set(values)}
            values = [spelt[value] for value in values]
        if len(one := set(values)) == 1:  # (none) for a site without campaigns, one country...
            [value] = one
            if whole is None:
                whole = _entry(visits, slots, list(range(len(values))))
            counted[name] = {value: replace(whole)}
            continue
        groups: dict[str, list[int]] = defaultdict(list)  # value: its sessions' places
        for at, value in enumerate(values):
            groups[value].append(at)
        counted[name] = {value: _entry(visits, slots, at) for value, at in groups.items()}
    return _topped(counted, exact_users=True)


def _entry(visits: list[tuple[str, bool, int, int]], slots: list[int], places: list[int]) -> Entry:
    """One value's entry: the sessions at these places of `visits` (and their slots)."""
    users, converted, views, durations = zip(*(visits[at] for at in places), strict=True)
    keys = set(users)
    return Entry(
        sessions=len(places),
        conversions=sum(converted),
        users=len(keys),
        sketch=sketch_of(keys),
        keys=keys,
        pageviews=sum(views),
        bounces=sum(v <= 1 for v in views),
        duration_sum=sum(durations),
        slots=dict(Counter(slots[at] for at in places)),
    )


def _topped(counted: Breakdown, *, exact_users: bool, top: int = STORED_TOP) -> Breakdown:
    """Keep each dimension's `top` values by sessions; fold the rest into OTHER (last).

    Users of a fold of several values: exact from their keys while an hour is counted,
    else the estimate of their merged sketches.
    """
    result: Breakdown = {}
    for name, values in counted.items():
        ranked = sorted(values.items(), key=lambda kv: (kv[0] == OTHER, -kv[1].sessions, kv[0]))
        kept = dict(ranked[:top])
        rest = [entry for _, entry in ranked[top:]]
        if OTHER in kept:
            rest.append(kept.pop(OTHER))
        if len(rest) == 1:
            kept[OTHER] = rest[0]
        elif rest:
            keys = set().union(*(e.keys for e in rest)) if exact_users else None
            kept[OTHER] = entries_total(rest, keys=keys)
        result[name] = kept
    return result


def breakdown_merge(parts: list[Breakdown]) -> Breakdown:
    """Combine the breakdowns of adjacent buckets (a day's hours, a month's days)."""
    if len(parts) == 1:
        return parts[0]
    merged: Breakdown = {name: {} for name in names()}
    for name in merged:
        grouped: dict[str, list[Entry]] = defaultdict(list)
        for part in parts:
            for value, entry in part.get(name, {}).items():
                grouped[value].append(entry)
        for value, entries in grouped.items():
            merged[name][value] = entries_total(entries)
    return _topped(merged, exact_users=False)


def breakdown_write(
    *,
    site_id: uuid.UUID,
    granularity: str,
    bucket: datetime,
    value: Breakdown,
    ttl: int,
    now: datetime,
) -> None:
    """Overwrite a bucket's breakdown rows (a dimension it no longer has goes too)."""
    bucket_overwrite(
        delete=bucket_breakdowns.DELETE_BUCKET,
        key=(site_id, granularity, bucket),
        insert=bucket_breakdowns.UPSERT,
        rows=(
            (
                site_id,
                granularity,
                bucket,
                name,
                orjson.dumps([_stored(v, e) for v, e in values.items()]).decode(),
                {v: sketch_bytes(e.sketch) for v, e in values.items()},
            )
            for name, values in value.items()
            if values
        ),
        now=now,
        ttl=ttl,
    )


def breakdowns_read(
    *, site_id: uuid.UUID, buckets: list[tuple[str, datetime]]
) -> dict[tuple[str, datetime], Breakdown]:
    """Return the stored breakdowns of these (resolution, bucket)s (absent: never sealed
    with sessions); one partition each, read together."""
    return breakdowns_begin(site_id=site_id, buckets=buckets)()


def breakdowns_begin(
    *, site_id: uuid.UUID, buckets: list[tuple[str, datetime]]
) -> Callable[[], dict[tuple[str, datetime], Breakdown]]:
    """Start reading the stored breakdowns of these buckets (`read_begin`); the returned
    call waits for them and parses them, as `breakdowns_read` answers."""
    pending = read_begin(prepare(bucket_breakdowns.SELECT_BUCKET), [(site_id, *k) for k in buckets])

    def parsed() -> dict[tuple[str, datetime], Breakdown]:
        stored: dict[tuple[str, datetime], Breakdown] = {}
        for key, rows in zip(buckets, pending(), strict=True):
            found: Breakdown = {}
            for row in rows:
                sketches = row["sketches"] or {}
                found[row["dimension"]] = {
                    counts[0]: stored_entry(counts, sketches.get(counts[0], b""))
                    for counts in orjson.loads(row["counts"])
                }
            if found:
                stored[key] = sources_folded(found)
        return stored

    return parsed


def _spelt(source: str) -> str:
    """A source as counted: its one spelling (foundation/sources.py)."""
    if source in (OTHER, NONE):
        return source
    return sources.source_name(source) or NONE


def sources_folded(found: Breakdown) -> Breakdown:
    """The breakdown with its sources spelt one way: the values of a row stored before
    ingest spelt them ("google" beside "Google") are added up into one entry."""
    stored = found.get(SOURCE)
    if not stored or all(_spelt(value) == value for value in stored):
        return found
    grouped: dict[str, list[Entry]] = defaultdict(list)
    for value, entry in stored.items():
        grouped[_spelt(value)].append(entry)
    return {**found, SOURCE: {value: entries_total(es) for value, es in grouped.items()}}


def _stored(value: str, e: Entry) -> list[Any]:
    """A value's stored counts: [value, sessions, users, conversions, page views,
    one-page visits, duration sum, {duration slot: visits}]."""
    slots = {str(slot): n for slot, n in e.slots.items()}
    return [
        value,
        e.sessions,
        e.users,
        e.conversions,
        e.pageviews,
        e.bounces,
        e.duration_sum,
        slots,
    ]


def stored_entry(counts: list[Any], sketch: bytes) -> Entry:
    """A stored value's entry (a row stored before the KPI counters: not `complete`)."""
    _, sessions, users, conversions, *kpi = counts
    if not kpi:
        return Entry(sessions, conversions, users, sketch, complete=False)
    pageviews, bounces, duration_sum, slots = kpi
    entry = Entry(sessions, conversions, users, sketch, pageviews=pageviews, bounces=bounces)
    entry.duration_sum, entry.slots = duration_sum, {int(k): n for k, n in slots.items()}
    return entry


def breakdown_rows(breakdown: Breakdown, *, top: int) -> dict[str, list[dict[str, Any]]]:
    """Each dimension's `top` values by sessions and the rest as "(other)", with the
    conversion rate (converted sessions / sessions)."""
    shown = _topped({name: breakdown.get(name, {}) for name in names()}, exact_users=False, top=top)
    return {
        name: [_shown(value, entry) for value, entry in values.items()]
        for name, values in shown.items()
    }


def _shown(value: str, entry: Entry) -> dict[str, Any]:
    rate = entry.conversions / entry.sessions if entry.sessions else 0.0
    return {
        "value": value,
        "sessions": entry.sessions,
        "users": entry.users,
        "conversions": entry.conversions,
        "conversion_rate": round(rate, 4),
    }
