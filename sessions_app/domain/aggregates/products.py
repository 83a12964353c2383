"""The aggregate products: what each counts in an hour, how it merges into days and months,
and how it is written and read back.

In the manner of Zulip's COUNT_STATS: a product is one object, `PRODUCTS` lists them, and
one driver (domain/aggregates/seal.py) seals hours, rolls up days and months and counts live
hours from them. A product counts an hour from the `sources.Hour` it is given (the hour's
tally, its sessions' summaries, its started sessions' rows: each read once, shared by
every product), so no product reads what another has read. A new product is one class
here plus its entry in `PRODUCTS`; tests/aggregates/test_products.py runs the contract
against every entry.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Protocol

from django.conf import settings

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


class Product(Protocol):
    """One aggregate product; values are whatever the product counts (its own type)."""

    name: str

    def hour(self, source: Hour) -> Any:
        """Count one hour."""

    def merge(self, parts: list[Any], *, start: datetime) -> Any:
        """Combine the values of a bucket's children (none: the empty value)."""

    def write(
        self,
        *,
        site_id: uuid.UUID,
        granularity: str,
        bucket: datetime,
        value: Any,
        ttl: int,
        now: datetime,
    ) -> None:
        """Overwrite a bucket's stored value whole."""

    def read(self, *, site_id: uuid.UUID, granularity: str, buckets: list[datetime]) -> list[Any]:
        """The stored values of these buckets (the ones that have one)."""


class Totals:
    """bucket_aggregates and series_points: events, sessions, users, tops, durations."""

    name = "totals"

    def hour(self, source: Hour) -> totals.Aggregates:
        result = totals.finish(source.counted, conversion_event=settings.CONVERSION_EVENT)
        totals.count_started(result, source.started)
        return result

    def merge(self, parts: list[totals.Aggregates], *, start: datetime) -> totals.Aggregates:
        return totals.aggregates_merge(parts) if parts else totals.Aggregates()

    def write(
        self,
        *,
        site_id: uuid.UUID,
        granularity: str,
        bucket: datetime,
        value: totals.Aggregates,
        ttl: int,
        now: datetime,
    ) -> None:
        totals.totals_write(site_id, granularity, bucket, value, now=now, ttl=ttl)

    def read(
        self, *, site_id: uuid.UUID, granularity: str, buckets: list[datetime]
    ) -> list[totals.Aggregates]:
        return [a for _, a in _range(site_id, granularity, buckets)]


class UserCounts:
    """bucket_users and rolling_counts: each user's events by event key (bots included)."""

    name = "user_counts"

    def hour(self, source: Hour) -> totals.UserCounts:
        return source.counted.users

    def merge(self, parts: list[totals.UserCounts], *, start: datetime) -> totals.UserCounts:
        if len(parts) == 1:
            return parts[0]
        return stored.user_counts_add(parts)

    def write(
        self,
        *,
        site_id: uuid.UUID,
        granularity: str,
        bucket: datetime,
        value: totals.UserCounts,
        ttl: int,
        now: datetime,
    ) -> None:
        totals.user_counts_write(site_id, granularity, bucket, value, ttl=ttl)

    def read(
        self, *, site_id: uuid.UUID, granularity: str, buckets: list[datetime]
    ) -> list[totals.UserCounts]:
        found = stored.bucket_user_counts(
            site_id=site_id, granularity=granularity, bucket_starts=buckets
        )
        return [found] if found else []


class Breakdowns:
    """bucket_breakdowns: sessions, users, conversions per dimension value."""

    name = "breakdowns"

    def hour(self, source: Hour) -> breakdowns.Breakdown:
        return breakdowns.breakdown_count(source.started)

    def merge(self, parts: list[breakdowns.Breakdown], *, start: datetime) -> breakdowns.Breakdown:
        return breakdowns.breakdown_merge(parts) if parts else {}

    def write(
        self,
        *,
        site_id: uuid.UUID,
        granularity: str,
        bucket: datetime,
        value: breakdowns.Breakdown,
        ttl: int,
        now: datetime,
    ) -> None:
        breakdowns.breakdown_write(
            site_id=site_id,
            granularity=granularity,
            bucket=bucket,
            breakdown=value,
            ttl=ttl,
            now=now,
        )

    def read(
        self, *, site_id: uuid.UUID, granularity: str, buckets: list[datetime]
    ) -> list[breakdowns.Breakdown]:
        keys = [(granularity, b) for b in buckets]
        return list(breakdowns.breakdowns_read(site_id=site_id, buckets=keys).values())


class Paths:
    """bucket_paths: the paths of up to five page views ending in the bucket."""

    name = "paths"

    def hour(self, source: Hour) -> paths.Stored:
        return paths.stored_of(paths.hour_count(source))

    def merge(self, parts: list[paths.Stored], *, start: datetime) -> paths.Stored:
        return paths.paths_merge(parts, begun_before=start) if parts else {}

    def write(
        self,
        *,
        site_id: uuid.UUID,
        granularity: str,
        bucket: datetime,
        value: paths.Stored,
        ttl: int,
        now: datetime,
    ) -> None:
        paths.paths_write(
            site_id=site_id,
            granularity=granularity,
            bucket=bucket,
            stored=value,
            ttl=ttl,
            now=now,
        )

    def read(
        self, *, site_id: uuid.UUID, granularity: str, buckets: list[datetime]
    ) -> list[paths.Stored]:
        return paths.buckets_read(site_id=site_id, buckets=[(granularity, b) for b in buckets])


class Heatmaps:
    """bucket_heatmaps: clicks by cell and element, rage and dead clicks, scroll depth."""

    name = "heatmaps"

    def hour(self, source: Hour) -> dict[heatmaps.Key, heatmaps.Heat]:
        return heatmaps.stored_of(source.counted.heat)

    def merge(
        self, parts: list[dict[heatmaps.Key, heatmaps.Heat]], *, start: datetime
    ) -> dict[heatmaps.Key, heatmaps.Heat]:
        return heatmaps.heat_merge(parts)

    def write(
        self,
        *,
        site_id: uuid.UUID,
        granularity: str,
        bucket: datetime,
        value: dict[heatmaps.Key, heatmaps.Heat],
        ttl: int,
        now: datetime,
    ) -> None:
        heatmap_rows.heat_write(
            site_id=site_id,
            granularity=granularity,
            bucket=bucket,
            stored=value,
            ttl=ttl,
            now=now,
        )

    def read(
        self, *, site_id: uuid.UUID, granularity: str, buckets: list[datetime]
    ) -> list[dict[heatmaps.Key, heatmaps.Heat]]:
        found = heatmap_rows.buckets_read(
            site_id=site_id, buckets=[(granularity, b) for b in buckets]
        )
        return [rows for rows in found if rows]


class Goals:
    """bucket_goals: conversions, converting sessions and users per goal of the site, in
    total and per breakdown value (domain/aggregates/goal_counts.py; a site without goals reads
    nothing)."""

    name = "goals"

    def hour(self, source: Hour) -> goal_counts.Counts:
        return hour_goal_counts(source)[1]

    def merge(self, parts: list[goal_counts.Counts], *, start: datetime) -> goal_counts.Counts:
        return goal_counts.goals_merge(parts) if parts else {}

    def write(
        self,
        *,
        site_id: uuid.UUID,
        granularity: str,
        bucket: datetime,
        value: goal_counts.Counts,
        ttl: int,
        now: datetime,
    ) -> None:
        goal_counts.goals_write(
            site_id=site_id,
            granularity=granularity,
            bucket=bucket,
            counts=value,
            ttl=ttl,
            now=now,
        )
        if granularity == "hour":  # the sessions' marks (the explorer's goal filter)
            goal_counts.sessions_mark(site_id=site_id, counts=value, now=now)

    def read(
        self, *, site_id: uuid.UUID, granularity: str, buckets: list[datetime]
    ) -> list[goal_counts.Counts]:
        return goal_counts.goals_read(site_id=site_id, buckets=[(granularity, b) for b in buckets])


class UserSets:
    """user_sets: who was active, and who did each event (up to usersets.MAX_NAMES), as
    roaring bitmaps of per-site user numbers (retention cohorts, lifecycle, stickiness).

    An hour's value holds user keys (no I/O: a live hour counts it too); its write
    numbers them. A stored value (read, merged) holds numbers."""

    name = "user_sets"

    def hour(self, source: Hour) -> usersets.KeySets:
        reached = goal_counts.goal_users(*hour_goal_counts(source))
        rows = source.user_rows()  # no tally to share (a goal's backfill): those alone
        if rows is not None:
            return usersets.rows_sets(rows, reached)
        return usersets.hour_sets(source.counted, reached)

    def merge(self, parts: list[usersets.Sets], *, start: datetime) -> usersets.Sets:
        return usersets.sets_merge(parts)

    def write(
        self,
        *,
        site_id: uuid.UUID,
        granularity: str,
        bucket: datetime,
        value: usersets.KeySets | usersets.Sets,
        ttl: int,
        now: datetime,
    ) -> None:
        usersets.sets_write(
            site_id=site_id, granularity=granularity, bucket=bucket, value=value, ttl=ttl
        )

    def read(
        self, *, site_id: uuid.UUID, granularity: str, buckets: list[datetime]
    ) -> list[usersets.Sets]:
        found = usersets.sets_read_many(
            site_id=site_id, buckets=[(granularity, b) for b in buckets], names=None
        )
        return list(found.values())


class Vitals:
    """bucket_vitals: web vitals sketches, ratings and worst elements per page, device,
    country and browser (domain/aggregates/vitals.py)."""

    name = "vitals"

    def hour(self, source: Hour) -> vitals.Stored:
        return vitals.stored_of(source.counted.vitals)

    def merge(self, parts: list[vitals.Stored], *, start: datetime) -> vitals.Stored:
        return vitals.stored_merge(parts)

    def write(
        self,
        *,
        site_id: uuid.UUID,
        granularity: str,
        bucket: datetime,
        value: vitals.Stored,
        ttl: int,
        now: datetime,
    ) -> None:
        vitals_rows.vitals_write(
            site_id=site_id,
            granularity=granularity,
            bucket=bucket,
            stored=value,
            ttl=ttl,
            now=now,
        )

    def read(
        self, *, site_id: uuid.UUID, granularity: str, buckets: list[datetime]
    ) -> list[vitals.Stored]:
        return vitals_rows.buckets_read(
            site_id=site_id, buckets=[(granularity, b) for b in buckets]
        )


def _range(
    site_id: uuid.UUID, granularity: str, buckets: list[datetime]
) -> list[tuple[datetime, totals.Aggregates]]:
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
    return [(b, a) for b, a in found if b in wanted]


TOTALS, USER_COUNTS, USER_SETS = Totals(), UserCounts(), UserSets()
BREAKDOWNS, PATHS, HEATMAPS = Breakdowns(), Paths(), Heatmaps()
GOALS, VITALS = Goals(), Vitals()
# User counts first: their write is the largest and runs while the others count; totals
# last: they wait for the sessions' summaries the driver reads meanwhile.
PRODUCTS: tuple[Product, ...] = (
    USER_COUNTS,
    USER_SETS,
    GOALS,
    VITALS,
    PATHS,
    HEATMAPS,
    BREAKDOWNS,
    TOTALS,
)
