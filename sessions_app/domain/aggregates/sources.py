"""What a seal reads: an hour's raw rows, its per-batch tallies and its started sessions' rows."""

from __future__ import annotations

import queue
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from django.conf import settings

from sessions_app.domain.aggregates import tally
from sessions_app.domain.goals.defs import Goal
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.eventdoc import event_row
from sessions_app.foundation.core.ids import time_uuid_bound
from sessions_app.foundation.tables import bucket_partials as bucket_partials_table
from sessions_app.foundation.tables import site_events_by_bucket, site_sessions


def site_bucket_events(*, site_id: uuid.UUID, hour: datetime, shards: int) -> list[dict[str, Any]]:
    """Return every event of a site's hour across its shards (aggregation source)."""
    bucket = timebuckets.floor(hour, timebuckets.Width.HOUR)
    statement = prepare(site_events_by_bucket.SELECT_SHARD)
    futures = [
        cassandra_session().execute_async(statement, (site_id, bucket, s)) for s in range(shards)
    ]
    events = [event_row(row) for f in futures for row in f.result()]
    events.sort(key=lambda e: e["event_id"].time)
    return events


def site_bucket_rows(
    *, site_id: uuid.UUID, hour: datetime, shards: int, page_size: int = 20_000
) -> Iterator[dict[str, Any]]:
    """Yield the raw rows of a site's hour from every shard (seal input), page by page.

    Only the columns the aggregates need.
    """
    return _shards_scan(
        site_events_by_bucket.SELECT_SEAL_ROWS,
        site_id=site_id,
        hour=hour,
        shards=shards,
        page_size=page_size,
    )


def site_bucket_funnel_rows(
    *, site_id: uuid.UUID, hour: datetime, shards: int, page_size: int = 5_000
) -> Iterator[dict[str, Any]]:
    """Yield the raw rows of a site's hour with what a funnel step matches (its props too)."""
    return _shards_scan(
        site_events_by_bucket.SELECT_FUNNEL_ROWS,
        site_id=site_id,
        hour=hour,
        shards=shards,
        page_size=page_size,
    )


def bucket_partials(*, site_id: uuid.UUID, hour: datetime, shards: int) -> tally.Tally | None:
    """Return the merged tallies the applier wrote for a site's hour; None if it wrote
    none, or if one event is in two of them (a resend logged twice, after Redis lost its
    dedup mark or a pending mark was taken over): then only the raw rows are exact.

    Each row is one batch's tally of its events in the hour (ingest.rows.partial_rows);
    whether they cover every raw row is BucketState.partials' business.
    """
    digests: list[bytes | None] = []

    def payloads() -> Iterator[bytes]:
        for row in _shards_scan(
            bucket_partials_table.SELECT_TALLIES,
            site_id=site_id,
            hour=hour,
            shards=shards,
            page_size=5_000,
        ):
            digests.append(row["ids"])
            yield row["tally"]

    folded = tally.tally_fold(payloads())  # page by page, while the next pages arrive
    if not digests or not tally.digests_disjoint(digests):
        return None  # none, or an event in two batches' tallies: the raw rows decide
    return folded


def _shards_scan(
    query_text: str, *, site_id: uuid.UUID, hour: datetime, shards: int, page_size: int
) -> Iterator[dict[str, Any]]:
    """Yield the rows of a (site, hour, shard) table's hour from every shard.

    Every shard pages concurrently: the driver fetches a shard's next page as soon
    as its previous one arrived, while this generator hands pages to the caller as
    they come.
    """
    bucket = timebuckets.floor(hour, timebuckets.Width.HOUR)
    statement = prepare(query_text)
    pages: queue.Queue[list[dict[str, Any]] | BaseException | None] = queue.Queue()

    def follow(future: Any) -> None:
        def on_page(rows: list[dict[str, Any]]) -> None:
            pages.put(rows)
            if future.has_more_pages:
                future.start_fetching_next_page()
            else:
                pages.put(None)

        future.add_callbacks(on_page, pages.put)

    for shard in range(shards):
        query = statement.bind((site_id, bucket, shard))
        query.fetch_size = page_size
        follow(cassandra_session().execute_async(query))
    remaining = shards
    while remaining:
        page = pages.get(timeout=settings.CASSANDRA_SCAN_TIMEOUT)
        if page is None:
            remaining -= 1
        elif isinstance(page, BaseException):
            raise page
        else:
            yield from page


SLICE_PAGE = 5_000  # site_sessions rows a page


def started_rows(*, site_id: uuid.UUID, hour: datetime) -> list[dict[str, Any]]:
    """Return the site_sessions rows of the sessions that started in one hour (one slice
    of each of its day's shard partitions)."""
    hour = timebuckets.floor(hour, timebuckets.Width.HOUR)
    day = timebuckets.floor(hour, timebuckets.Width.DAY)
    end = timebuckets.next_start(hour, timebuckets.Width.HOUR)
    low, high = time_uuid_bound(hour), time_uuid_bound(end)
    statement = prepare(site_sessions.with_dimensions(site_sessions.SELECT_SLICE))
    futures = []
    for shard in range(max(1, settings.SESSION_SHARDS)):
        query = statement.bind((site_id, day, shard, low, high))
        query.fetch_size = SLICE_PAGE
        futures.append(cassandra_session().execute_async(query))
    return [row for future in futures for row in future.result()]


@dataclass
class Hour:
    """One hour of a site as its aggregate products count it: each input is read once,
    when the first product asks for it, and shared by the others.

    `partials`: fold the batches' tallies when they cover the hour (BucketState.partials),
    else tally the raw rows (an erasure edited the hour, or a live count). `goals`: the
    site's goals, matched as the raw rows are tallied (a seal reads them first, on its
    own thread: a tally never reads SQL).
    """

    site_id: uuid.UUID
    start: datetime
    shards: int
    partials: bool = False
    goals: Sequence[Goal] | None = None  # None: not read
    # The goals' count of the hour, counted once for the two products that use it (goals,
    # and user_sets' "goal:<id>" sets): products.hour_goal_counts.
    goal_counts: Any = field(default=None, repr=False, compare=False)

    @property
    def end(self) -> datetime:
        return timebuckets.next_start(self.start, timebuckets.Width.HOUR)

    @cached_property
    def counted(self) -> tally.Tally:
        """The hour's tally: its batches' tallies folded, or its raw rows tallied."""
        folded = (
            bucket_partials(site_id=self.site_id, hour=self.start, shards=self.shards)
            if self.partials
            else None
        )
        if folded is not None:
            return folded
        return tally.tally(
            site_bucket_rows(site_id=self.site_id, hour=self.start, shards=self.shards),
            goals=self.goals or (),
        )

    def user_rows(self) -> Iterator[dict[str, Any]] | None:
        """Who did what in the hour (user_key, type, name, is_bot), read alone, when no
        tally of it is there to share (none counted yet, none to fold: a goal's backfill);
        None when there is one (`counted`)."""
        if self.tallied() is not None or self.partials:
            return None
        return _shards_scan(
            site_events_by_bucket.SELECT_USER_ROWS,
            site_id=self.site_id,
            hour=self.start,
            shards=self.shards,
            page_size=20_000,
        )

    def tallied(self) -> tally.Tally | None:
        """The hour's tally if a product has counted it already, else None (read nothing)."""
        found: tally.Tally | None = self.__dict__.get("counted")
        return found

    @cached_property
    def started(self) -> list[dict[str, Any]]:
        """The site_sessions rows of the sessions that started in the hour."""
        return started_rows(site_id=self.site_id, hour=self.start)
