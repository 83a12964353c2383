"""Write timestamps: the latest a write may carry, and the one an erasure's delete binds.

Cassandra keeps, per cell, the write with the highest timestamp, and a delete shadows
only cells stamped at or before it. An event may be dated up to MAX_AHEAD after its
receipt; a cell stamped `USING TIMESTAMP` with such an event's time would outlive an
erasure's delete stamped at the erasure's present. So no write binds a timestamp later
than its request's receipt plus CLOCK_SKEW_TOLERANCE (`ceiling_us`; a seal's or a read's
"receipt" is its own clock), and an erasure's delete of a table written from event times
binds `erasure_us()`, later than the ceiling of any request received before it.
"""

from __future__ import annotations

import time
from datetime import timedelta

from django.conf import settings

# An event dated further ahead of its receipt is clamped to the receipt
# (domain/ingest/steps/validate.py), so its rows are never written earlier than MAX_AHEAD before
# its time.
MAX_AHEAD = timedelta(hours=24)


def _skew_us() -> int:
    return int(settings.CLOCK_SKEW_TOLERANCE / timedelta(microseconds=1))


def ceiling_us(received_us: int) -> int:
    """Return the latest write timestamp (µs) a request received at `received_us` may bind."""
    return received_us + _skew_us()


def now_us() -> int:
    return time.time_ns() // 1000


def erasure_us() -> int:
    """Return the timestamp (µs) an erasure's delete binds: above every ceiling of a
    request received until now (a request received later is refused the erased key)."""
    return ceiling_us(now_us()) + 1
