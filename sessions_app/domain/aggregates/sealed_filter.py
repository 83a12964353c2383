"""A single-dimension filter answered from sealed per-bucket counts: the KPI counters of
one breakdown value (domain/aggregates/breakdowns.py) per bucket of a period, when every stored
bucket in it kept that value (else None: the caller reads site_sessions instead)."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, tzinfo

import orjson
from django.conf import settings

from sessions_app.domain.aggregates import breakdowns
from sessions_app.domain.aggregates.breakdowns import OTHER, Entry, entries_total
from sessions_app.domain.aggregates.products import BREAKDOWNS
from sessions_app.domain.aggregates.report import HOUR, MAX_LIVE_HOURS, Unit, bucket_plan
from sessions_app.domain.aggregates.seal import hour_live
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.core.cql import prepare, read_windowed
from sessions_app.foundation.tables import bucket_breakdowns

ValueBuckets = tuple[list[tuple[datetime, Entry]], Entry]  # (bucket start, its entry), total


def value_report(
    *,
    site_id: uuid.UUID,
    shards: int,
    start: datetime,
    end: datetime,
    width: str,
    zone: tzinfo,
    cut: datetime,
    dimension: str,
    value: str,
) -> ValueBuckets | None:
    """Return one dimension value's entry per `width` bucket of the zone over [start, end)
    and its total before `cut`, added up from the same stored buckets as `site_report`
    (unsealed hours counted live, MAX_LIVE_HOURS at most); None when a stored bucket
    folded the value into "(other)", was stored before the KPI counters, or there are
    more unsealed hours than that."""
    if dimension not in breakdowns.names():
        raise RangeError("dimension", f"one of {', '.join(breakdowns.names())}")
    try:  # a half-hour zone, or too many sealed hours: site_sessions answers
        plan = bucket_plan(site_id=site_id, start=start, end=end, zone=zone, width=width, cut=cut)
    except RangeError:
        return None
    edges, segments, pieces, states, sealed = (
        plan.edges,
        plan.segments,
        plan.pieces,
        plan.states,
        plan.sealed,
    )
    units = plan.units
    now = datetime.now(UTC)
    settled = now - settings.ALLOWED_LATENESS
    live = [
        u
        for u in units
        if u not in sealed
        and u[0] == "hour"
        and u[1] < now
        and (u[1] in states or u[1] + HOUR > settled)
    ]
    if len(live) > MAX_LIVE_HOURS:
        return None
    found = _stored_entries(site_id, [u for u in units if u in sealed], dimension, value)
    for unit in live:
        used = max(shards, states.get(unit[1], ("", 1))[1])
        counted = hour_live(site_id=site_id, hour=unit[1], shards=used, products=(BREAKDOWNS,))
        found[unit] = _kept(counted[BREAKDOWNS.name].get(dimension), value)
    if any(entry is None for entry in found.values()):
        return None
    entries: dict[Unit, Entry] = {u: e for u, e in found.items() if e is not None}
    per_piece = [entries_total([entries[u] for u in piece if u in entries]) for piece in pieces]
    spans = list(itertools.pairwise(segments))
    buckets = [
        (a, entries_total([p for (s, _), p in zip(spans, per_piece, strict=True) if a <= s < b]))
        for a, b in itertools.pairwise(edges)
    ]
    total = entries_total([p for (s, _), p in zip(spans, per_piece, strict=True) if s < plan.cut])
    return buckets, total


def _kept(values: dict[str, Entry] | None, value: str) -> Entry | None:
    """A bucket's entry of the value: its own, an empty one if the bucket had no such
    session, None if it may be inside "(other)" or the row predates the KPI counters."""
    if not values:
        return Entry()
    entry = values.get(value)
    if entry is not None:
        return entry if entry.complete else None
    return None if OTHER in values else Entry()


def _stored_entries(
    site_id: uuid.UUID, units: list[Unit], dimension: str, value: str
) -> dict[Unit, Entry | None]:
    """Each sealed unit's entry of the value (one row of its bucket_breakdowns partition)."""
    statement = prepare(bucket_breakdowns.SELECT_DIMENSION)
    results = read_windowed(statement, [(site_id, *unit, dimension) for unit in units])
    found: dict[Unit, Entry | None] = {}
    for unit, rows in zip(units, results, strict=True):
        if not rows:
            found[unit] = Entry()
            continue
        row = rows[0]
        sketches = row["sketches"] or {}
        values = {
            counts[0]: breakdowns.stored_entry(counts, sketches.get(counts[0], b""))
            for counts in orjson.loads(row["counts"])
        }
        found[unit] = _kept(values, value)
    return found
