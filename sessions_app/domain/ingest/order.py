"""A request's valid events on their way to the tables: their row keys and their order.

An event's row key is a TimeUUID of its time (foundation/core/ids.py), so rows sort by time and,
within one instant, by a hash of their client ids; `in_request_order` makes that
instant's order the one the client recorded (docs/tracker.md, "Order").
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from sessions_app.domain.ingest.validation import ValidEvent
from sessions_app.foundation.core.ids import event_uuid


@dataclass
class Candidate:
    """A valid event of a request (its index there) with its times and row key."""

    index: int
    event: ValidEvent
    ts: datetime  # as stored: millisecond precision
    order_ts: datetime  # ts plus the microseconds that order events within its millisecond
    event_id: uuid.UUID  # a TimeUUID of order_ts: the rows' clustering order
    late: bool
    clamped: bool

    @property
    def user_key(self) -> str:
        return self.event.user_id or self.event.anonymous_id


def unique(candidates: list[Candidate]) -> list[Candidate]:
    """Drop repeats of a client event id within one request (the first one counts)."""
    seen: set[str] = set()
    kept = []
    for c in candidates:
        if c.event.client_id not in seen:
            seen.add(c.event.client_id)
            kept.append(c)
    return kept


def in_request_order(site_id: uuid.UUID, candidates: list[Candidate]) -> list[Candidate]:
    """Give a visitor's events that carry the same time in one request the request's order.

    An event's row key is a TimeUUID of its time, so within one instant rows would sort by
    the hash of their client ids. A client that sends milliseconds only (most server-side
    SDKs) can record several events in one: the second of them is placed 1 µs after the
    first, the third 2 µs, and so on (never past the millisecond's end). A resent request
    makes the same choice, so its events map to the same rows. The tracker sends a
    microsecond that already counts up within its millisecond (docs/tracker.md).
    """
    times = ranked_times([(c.user_key, c.order_ts) for c in candidates])
    for c, at in zip(candidates, times, strict=True):
        if at != c.order_ts:
            c.order_ts = at
            c.event_id = event_uuid(site_id=site_id, client_event_id=c.event.client_id, ts=at)
    return candidates


def ranked_times(events: list[tuple[str, datetime]]) -> list[datetime]:
    """The order time of each (user key, time) of a request, in request order: the k-th
    repeat of a user's time is k µs later, never past the end of its millisecond."""
    seen: Counter[tuple[str, datetime]] = Counter()
    times = []
    for key in events:
        rank = seen[key]
        seen[key] += 1
        at = key[1]
        times.append(at + timedelta(microseconds=min(rank, 999 - at.microsecond % 1000)))
    return times
