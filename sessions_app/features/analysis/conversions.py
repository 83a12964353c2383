"""A site's conversions over a range, from the sealed goal counts (bucket_goals: sealed
days and hours, unsealed hours counted live): each goal's counts per range, and the
unique visitors who reached any goal, which is what the KPI's conversion rate divides by
the unique visitors. The goal table (goal_table.py) reads the same counts, so a goal's rate
there and the KPI's agree, and a goal added later counts its past once backfilled."""

from __future__ import annotations

import uuid
from datetime import datetime

from sessions_app.domain.aggregates import goal_counts
from sessions_app.domain.aggregates.report import MAX_LIVE_HOURS, bucket_cover
from sessions_app.domain.aggregates.sketch import sketch_estimate, sketch_union
from sessions_app.domain.aggregates.sources import Hour
from sessions_app.domain.goals.defs import Goal
from sessions_app.foundation.core import timebuckets

Span = tuple[datetime, datetime, tuple[str, ...]]  # [start, end) and the distinct counts
Entries = dict[str, list[goal_counts.GoalCount]]  # by goal digest: its buckets' counts


def span_entries(
    *,
    site_id: uuid.UUID,
    goals: list[Goal],
    spans: list[Span],
    dimension: str = "",
    value: str = "",
) -> list[tuple[Entries, int]]:
    """Each span's goal counts, per goal digest one entry per bucket read, over [start, end)
    in whole UTC hours, of the sessions with this dimension value (or all), with the
    sketches of the distinct counts the span asks for (visits, visitors); also how many
    unsealed hours were past MAX_LIVE_HOURS and left out. The spans' stored rows are read
    at once (one concurrent round), then the live hours."""
    digests = sorted({g.digest for g in goals})
    if not digests:
        return [({}, 0) for _ in spans]
    hours = [(timebuckets.floor(s, "hour"), timebuckets.ceil(e, "hour"), d) for s, e, d in spans]
    covers = [bucket_cover(site_id=site_id, start=start, end=end) for start, end, _ in hours]
    reads = [(cover[0], span[2]) for cover, span in zip(covers, hours, strict=True)]
    parts = goal_counts.goal_values_read(
        site_id=site_id, reads=reads, digests=digests, dimension=dimension, value=value
    )
    found = []
    for (_, live, shards), stored in zip(covers, parts, strict=True):
        for hour in live[-MAX_LIVE_HOURS:]:  # counted as their seal will count them
            source = Hour(site_id=site_id, start=hour, shards=max(1, shards.get(hour, 1)))
            counted = goal_counts.hour_goals(source, goals)
            stored.append({k: e for k, e in counted.items() if k[1:] == (dimension, value)})
        grouped: Entries = {d: [] for d in digests}
        for part in stored:
            for (digest, _, _), entry in part.items():
                if digest in grouped:
                    grouped[digest].append(entry)
        found.append((grouped, max(0, len(live) - MAX_LIVE_HOURS)))
    return found


def goal_visitors(
    *,
    site_id: uuid.UUID,
    goals: list[Goal],
    spans: list[tuple[datetime, datetime]],
    dimension: str = "",
    value: str = "",
) -> list[int]:
    """Each span's unique visitors who reached any of these goals (of the sessions with
    this dimension value, or all): exact from one goal's single stored bucket, else the
    estimate of their sketches' union (±1.6 %, like every visitor count across buckets)."""
    found = span_entries(
        site_id=site_id,
        goals=goals,
        spans=[(start, end, ("visitors",)) for start, end in spans],
        dimension=dimension,
        value=value,
    )
    counts = []
    for grouped, _ in found:
        entries = [e for per_goal in grouped.values() for e in per_goal]
        if len(entries) == 1:
            counts.append(entries[0].users)
        else:
            counts.append(sketch_estimate(sketch_union(e.users_sketch for e in entries)))
    return counts
