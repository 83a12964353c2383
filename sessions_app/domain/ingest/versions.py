"""A plan's version: the write timestamp that orders the session summaries it writes.

A session's summary rows (user_sessions, site_sessions) are overwritten whole by every
plan that touches the session, `USING TIMESTAMP` the plan's version, so the highest
version stays. Requests of one visitor are sessionized one at a time (the visitor's Redis
lock), each on the state the one before left; but they may take the lock in another order
than they arrived — a beacon sent beside a smaller one on unload is parsed longer and
reaches the lock second. Versioned by receipt time alone, the summary computed last, on
every event, lost to the smaller one computed before it. So a plan's version is its
receipt time, or one microsecond above the version of every summary it rebuilt (carried
by the cached state, `SessionState.version`, or read back as the row's write time),
whichever is later: summaries are ordered as they were computed.

The bound: a state this plan read was computed by a request that had arrived before this
one took the lock, so the version exceeds this request's receipt time by at most the time
it took to reach the lock, plus a microsecond per plan computed within the same
microsecond; and never by more than `write_deadline_seconds()`, the time after which a
request writes nothing (`within_deadline`). A request accepted before an
erasure's suppression thus writes below the erasure's deletes, stamped
ERASURE_SETTLE_SECONDS after it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from django.conf import settings

from sessions_app.domain.ingest.context import StorageUnavailable
from sessions_app.domain.ingest.plan import Plan, version_of
from sessions_app.domain.ingest.state import SessionState


def write_deadline_seconds() -> int:
    """Return how long after its receipt a request may still write (0: no deadline)."""
    return max(0, settings.ERASURE_SETTLE_SECONDS - settings.SUPPRESSION_CACHE_SECONDS - 1)


def within_deadline(started: float) -> None:
    """Refuse to write for a request that has run longer than an erasure waits.

    An erasure deletes ERASURE_SETTLE_SECONDS after it suppresses a key; a request that
    passed the suppression check before that must have written by then. Past this
    deadline nothing more is written: before the log write the request fails (503, and
    the client's retry meets the suppression); after it, the plan is left to the redo,
    which strips erased keys. `started` is the request's time.monotonic().
    """
    deadline = write_deadline_seconds()
    if deadline > 0 and time.monotonic() - started > deadline:
        raise StorageUnavailable("the request took too long to be written safely")


def plan_version(received: int, read: Iterable[int]) -> int:
    """Return the version of a plan received at `received` (µs) that rebuilt summaries
    of these versions: above each of them, at most the write deadline past receipt."""
    above = max(read, default=0) + 1
    return max(received, min(above, received + write_deadline_seconds() * 1_000_000))


def plan_stamp(plan: Plan, touched: Sequence[SessionState]) -> None:
    """Version the plan above every summary it rebuilt, and mark those states (its
    summaries, and cached for the next request) with the version they are written at."""
    plan.version = plan_version(version_of(plan.received_at), (s.version for s in touched))
    for state in touched:
        state.version = plan.version
