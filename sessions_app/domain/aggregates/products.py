"""The aggregate products, each one declaration (domain/aggregates/product.py): what it
counts in an hour, how it merges into days and months, how it is written and read back.

In the manner of Zulip's COUNT_STATS: `PRODUCTS` lists them, and one driver
(domain/aggregates/seal.py) seals hours, rolls up days and months and counts live hours
from them. A product counts an hour from the `sources.Hour` it is given (the hour's
tally, its sessions' summaries, its started sessions' rows: each read once, shared by
every product), so no product reads what another has read. A new product is its
declaration and its entry in `PRODUCTS`; on the generic store (product_rows.declare) it
needs no table (ARCHITECTURE.md: "Add a sealed product"). tests/aggregates/test_products.py
runs the contract against every entry.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from sessions_app.domain.aggregates import (
    breakdowns,
    goal_counts,
    heatmap_rows,
    heatmaps,
    paths,
    stored,
    totals,
    usersets,
    vitals,
    vitals_rows,
)
from sessions_app.domain.aggregates.product import Product, Read
from sessions_app.domain.aggregates.sources import Hour
from sessions_app.domain.goals.defs import Goal, site_goals
from sessions_app.foundation.core import timebuckets


def hour_goal_counts(source: Hour) -> tuple[list[Goal], goal_counts.Counts]:
    """The site's goals and their count of the hour, counted once however many products ask."""
    if source.goal_counts is None:
        known = source.goals  # what the seal read, else the site's goals now
        found = list(known if known is not None else site_goals(source.site_id))
        source.goal_counts = (found, goal_counts.hour_goals(source, found))
    return source.goal_counts


def _of_granularity(read: Callable[..., Iterable[Any]]) -> Read:
    """A read of (granularity, bucket) pairs as a product's read of one granularity."""

    def product_read(*, site_id: uuid.UUID, granularity: str, buckets: list[datetime]) -> list[Any]:
        return list(read(site_id=site_id, buckets=[(granularity, b) for b in buckets]))

    return product_read


def _totals_hour(source: Hour) -> totals.Aggregates:
    result = totals.finish(source.counted)
    totals.count_started(result, source.started)
    return result


def _totals_read(
    *, site_id: uuid.UUID, granularity: str, buckets: list[datetime]
) -> list[totals.Aggregates]:
    """The stored aggregate rows of these buckets: one slice from the first to the last."""
    if not buckets:
        return []
    wanted = set(buckets)
    found = stored.aggregates_range(
        site_id=site_id,
        granularity=granularity,
        start=min(buckets),
        end=timebuckets.next_start(max(buckets), granularity),
    )
    return [a for b, a in found if b in wanted]


def _user_counts_read(
    *, site_id: uuid.UUID, granularity: str, buckets: list[datetime]
) -> list[totals.UserCounts]:
    """The buckets' counts summed into one value (what a rollup merges anyway)."""
    found = stored.bucket_user_counts(
        site_id=site_id, granularity=granularity, bucket_starts=buckets
    )
    return [found] if found else []


def _user_sets_hour(source: Hour) -> usersets.KeySets:
    """An hour's value holds user keys (no I/O: a live hour counts it too); its write
    numbers them. A stored value (read, merged) holds numbers."""
    reached = goal_counts.goal_users(*hour_goal_counts(source))
    rows = source.user_rows()  # no tally to share (a goal's backfill): those alone
    if rows is not None:
        return usersets.rows_sets(rows, reached)
    return usersets.hour_sets(source.counted, reached)


def _sets_read(*, site_id: uuid.UUID, buckets: list[tuple[str, datetime]]) -> list[usersets.Sets]:
    return list(usersets.sets_read_many(site_id=site_id, buckets=buckets, names=None).values())


def _heat_read(
    *, site_id: uuid.UUID, buckets: list[tuple[str, datetime]]
) -> list[dict[heatmaps.Key, heatmaps.Heat]]:
    return [rows for rows in heatmap_rows.buckets_read(site_id=site_id, buckets=buckets) if rows]


# bucket_aggregates and series_points: events, sessions, users, tops, durations.
TOTALS: Product[totals.Aggregates] = Product(
    name="totals",
    hour=_totals_hour,
    merge=lambda parts, start: totals.aggregates_merge(parts) if parts else totals.Aggregates(),
    write=totals.totals_write,
    read=_totals_read,
)

# bucket_users and rolling_counts: each user's events by event key (bots included).
USER_COUNTS: Product[totals.UserCounts] = Product(
    name="user_counts",
    hour=lambda source: source.counted.users,
    merge=lambda parts, start: stored.user_counts_add(parts),
    write=totals.user_counts_write,
    read=_user_counts_read,
)

# bucket_breakdowns: sessions, users, conversions per dimension value.
BREAKDOWNS: Product[breakdowns.Breakdown] = Product(
    name="breakdowns",
    hour=lambda source: breakdowns.breakdown_count(source.started),
    merge=lambda parts, start: breakdowns.breakdown_merge(parts) if parts else {},
    write=breakdowns.breakdown_write,
    read=_of_granularity(lambda **at: breakdowns.breakdowns_read(**at).values()),
)

# bucket_paths: the paths of up to five page views ending in the bucket.
PATHS: Product[paths.Stored] = Product(
    name="paths",
    hour=lambda source: paths.stored_of(paths.hour_count(source)),
    merge=lambda parts, start: paths.paths_merge(parts, begun_before=start) if parts else {},
    write=paths.paths_write,
    read=_of_granularity(paths.buckets_read),
)

# bucket_heatmaps: clicks by cell and element, rage and dead clicks, scroll depth.
HEATMAPS: Product[dict[heatmaps.Key, heatmaps.Heat]] = Product(
    name="heatmaps",
    hour=lambda source: heatmaps.stored_of(source.counted.heat),
    merge=lambda parts, start: heatmaps.heat_merge(parts),
    write=heatmap_rows.heat_write,
    read=_of_granularity(_heat_read),
)

# bucket_goals: conversions, converting sessions and users per goal of the site, in total
# and per breakdown value (domain/aggregates/goal_counts.py; a site without goals reads
# nothing).
GOALS: Product[goal_counts.Counts] = Product(
    name="goals",
    hour=lambda source: hour_goal_counts(source)[1],
    merge=lambda parts, start: goal_counts.goals_merge(parts) if parts else {},
    write=goal_counts.goals_write,
    read=_of_granularity(goal_counts.goals_read),
)

# user_sets: who was active, and who did each event (up to usersets.MAX_NAMES), as
# roaring bitmaps of per-site user numbers (retention cohorts, lifecycle, stickiness).
USER_SETS: Product[Any] = Product(
    name="user_sets",
    hour=_user_sets_hour,
    merge=lambda parts, start: usersets.sets_merge(parts),
    write=usersets.sets_write,
    read=_of_granularity(_sets_read),
)

# bucket_vitals: web vitals sketches, ratings and worst elements per page, device,
# country and browser (domain/aggregates/vitals.py).
VITALS: Product[vitals.Stored] = Product(
    name="vitals",
    hour=lambda source: vitals.stored_of(source.counted.vitals),
    merge=lambda parts, start: vitals.stored_merge(parts),
    write=vitals_rows.vitals_write,
    read=_of_granularity(vitals_rows.buckets_read),
)

# User counts first: their write is the largest and runs while the others count; totals
# last: they wait for the sessions' summaries the driver reads meanwhile.
PRODUCTS: tuple[Product[Any], ...] = (
    USER_COUNTS,
    USER_SETS,
    GOALS,
    VITALS,
    PATHS,
    HEATMAPS,
    BREAKDOWNS,
    TOTALS,
)
