"""Reads for the partition-size report (monitoring partition sizes).

For each table whose partitions take writes over a span of time (a bucket, a
session, a TTL window) the report puts three sizes side by side:

- the estimate: the sizing formula, with the write rate observed in
  `ingest_stats` at the window's peak hour and the mean row size measured on
  rows sampled from the largest partition found (an assumed size if none);
- Cassandra's own figure: `system.size_estimates` (mean partition size and
  partition count per table). It covers flushed SSTables only and the primary
  ranges of the node that answers, and is refreshed every few minutes, so a
  fresh node shows nothing until its memtables are flushed;
- the largest recent partitions the report can name from known keys (the peak
  hour's shards, its heaviest users and sessions, the log buckets of that
  hour, the feed sentinels): rows counted x mean row size.

Every query names one partition and has a LIMIT; counting stops at COUNT_CAP
rows a partition and ROW_BUDGET rows a report, so a count that hit a cap is a
lower bound and says so.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sessions_app.domain.partitions import probes
from sessions_app.domain.partitions.counting import ROW_BUDGET, RowCounter, TableSize, Window
from sessions_app.domain.partitions.estimates import (
    MAX_WINDOW_HOURS,
    HourIngest,
    ingest_hours,
    size_estimates,
)
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.timebuckets import Width
from sessions_app.foundation.tables import registry


@dataclass(frozen=True)
class PartitionReport:
    """The partition-size report of one site over a window of hours."""

    site_id: uuid.UUID
    start: datetime
    end: datetime
    hours: list[HourIngest]
    peak: HourIngest | None  # the hour with the most accepted events
    tables: list[TableSize]
    estimates_found: bool  # size_estimates had rows for this keyspace
    rows_counted: int
    budget_reached: bool


def partition_report(
    *, site_id: uuid.UUID, event_shards: int, now: datetime, hours: int = 24
) -> PartitionReport:
    """Return estimated and observed partition sizes of a site's tables over the last hours."""
    if not 1 <= hours <= MAX_WINDOW_HOURS:
        raise ValueError(f"hours: between 1 and {MAX_WINDOW_HOURS}, got {hours}")
    end = timebuckets.next_start(now, Width.HOUR)
    start = end - timedelta(hours=hours)
    ingest = ingest_hours(site_id=site_id, start=start, end=end)
    by_events = max(ingest, key=lambda h: (h.accepted, h.hour))
    by_requests = max(ingest, key=lambda h: (h.requests, h.hour))
    window = Window(
        site_id=site_id,
        shards=max(1, event_shards),
        start=start,
        end=end,
        peak=by_events if by_events.accepted else None,
        peak_requests=by_requests if by_requests.requests else None,
        peak_rejected=max(h.rejected for h in ingest),
        counter=RowCounter(ROW_BUDGET),
        estimates=size_estimates(),
    )
    # In registry order: the site-events probe finds the heaviest users and sessions
    # whose partitions the next two count.
    heaviest = probes.Heaviest()
    tables = [
        getattr(probes, spec.sizing)(window, heaviest) for spec in registry.TABLES if spec.sizing
    ]
    return PartitionReport(
        site_id=site_id,
        start=start,
        end=end,
        hours=ingest,
        peak=window.peak,
        tables=tables,
        estimates_found=bool(window.estimates),
        rows_counted=window.counter.total,
        budget_reached=window.counter.budget_reached,
    )
