"""Data quality reads: failed events and per-bucket ingest counts (accepted, rejected, late)."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import bounded_limit
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.tables import failed_events, ingest_stats


def failed_events_list(
    *, site_id: uuid.UUID, day: datetime, limit: int = 100
) -> list[dict[str, Any]]:
    """Return the rejected events of a site on a UTC day, newest first."""
    bucket = timebuckets.floor(day, timebuckets.Width.DAY)
    rows = cassandra_session().execute(
        prepare(failed_events.SELECT_DAY), (site_id, bucket, bounded_limit(limit))
    )
    return [{**row, "received_at": timebuckets.from_driver(row["received_at"])} for row in rows]


def ingest_counts(*, site_id: uuid.UUID, hour: datetime) -> dict[str, Any]:
    """Return the data-quality counts of a site's hour: received, accepted, rejected by reason."""
    bucket = timebuckets.floor(hour, timebuckets.Width.HOUR)
    totals: dict[str, Any] = {
        "received": 0,
        "accepted": 0,
        "duplicates": 0,
        "late": 0,
        "clamped": 0,
        "rejected": {},
    }
    for row in cassandra_session().execute(prepare(ingest_stats.SELECT_BUCKET), (site_id, bucket)):
        for name in ("received", "accepted", "duplicates", "late", "clamped"):
            totals[name] += row[name]
        for reason, count in (row["rejected"] or {}).items():
            totals["rejected"][reason] = totals["rejected"].get(reason, 0) + count
    return totals


def failed_payload(raw: Any) -> str:
    """Return a rejected event as failed_events keeps it: JSON, else its repr."""
    try:
        return json.dumps(raw, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return repr(raw)
