"""Step validate: check each event, correct its clock, drop its secrets, give it its id.

A rejection keeps its index and reason (and, in failed_events, its payload without
secret URL parameters; an erased key's event without any payload). The accepted events
leave in request order, a visitor's same-instant events 1 µs apart (domain/ingest/order.py).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from sessions_app.domain.ingest.context import Request, Validated
from sessions_app.domain.ingest.order import Candidate, in_request_order, unique
from sessions_app.domain.ingest.plan import Failure
from sessions_app.domain.ingest.redact import Redactor, redactor
from sessions_app.domain.ingest.validation import EventError, ValidEvent, validate_event
from sessions_app.domain.ledger import suppression
from sessions_app.domain.ledger.quality import failed_payload
from sessions_app.foundation.core import stamps, timebuckets
from sessions_app.foundation.core.ids import event_uuid


class Suppressed(EventError):
    """The event's user key was erased on request: rejected, and its payload never stored."""

    def __init__(self, field: str) -> None:
        super().__init__(field, "erased on request; not accepted")


def validate(request: Request, raw_events: Sequence[Any]) -> Validated:
    """Keep the request's valid events in request order; reject the others with a reason."""
    site = request.site
    skew = _skew(request.source.sent_at, request.received_at)
    suppressed = suppression.suppressed_keys(site_id=site.id)
    redact = redactor(tuple(site.redact_params))
    candidates = []
    found = Validated(candidates=[], rejected=[], failures=[], reasons=Counter())
    for index, raw in enumerate(raw_events):
        try:
            if suppressed:
                _check_suppressed(raw, suppressed)
            event = redact.valid(validate_event(raw))
            candidates.append(_candidate(site.id, request.received_at, index, event, skew))
        except EventError as exc:
            _reject(found, request.source.name, index, raw, exc, redact)
    found.candidates.extend(in_request_order(site.id, unique(candidates)))
    return found


def _skew(sent_at: datetime | None, received_at: datetime) -> timedelta:
    """The client clock's error, when sent_at is off by more than the tolerance."""
    if sent_at is None:
        return timedelta(0)
    difference = received_at - sent_at
    if abs(difference) <= settings.CLOCK_SKEW_TOLERANCE:
        return timedelta(0)
    # Whole milliseconds: a corrected time keeps its place within its millisecond.
    return timedelta(milliseconds=round(difference / timedelta(milliseconds=1)))


def _check_suppressed(raw: Any, suppressed: frozenset[str]) -> None:
    """Reject an event of an erased key before validation, so even an invalid one is
    stored without its payload (validation keeps ids as sent, so this is exact)."""
    if not isinstance(raw, dict):
        return
    for name in ("anonymous_id", "user_id"):
        value = raw.get(name)
        if isinstance(value, str) and value in suppressed:
            raise Suppressed(name)


def _candidate(
    site_id: uuid.UUID, received_at: datetime, index: int, event: ValidEvent, skew: timedelta
) -> Candidate:
    """The accepted event with its corrected time, flags and id."""
    try:
        ts, clamped = event.ts + skew, False
    except OverflowError:  # ts and sent_at at opposite ends of the range
        raise EventError("ts", "out of range once corrected by sent_at") from None
    if ts > received_at + stamps.MAX_AHEAD:
        ts, clamped = timebuckets.floor_ms(received_at), True
    if ts < received_at - settings.MAX_EVENT_AGE:
        raise EventError("ts", f"older than {settings.MAX_EVENT_AGE.days} days; not accepted")
    late = (
        timebuckets.next_start(ts, timebuckets.Width.HOUR) + settings.ALLOWED_LATENESS < received_at
    )
    order_ts = ts + timedelta(microseconds=event.sub_ms)
    return Candidate(
        index=index,
        event=event,
        ts=ts,
        order_ts=order_ts,
        late=late,
        clamped=clamped,
        event_id=event_uuid(site_id=site_id, client_event_id=event.client_id, ts=order_ts),
    )


def _reject(
    found: Validated, source: str, index: int, raw: Any, exc: EventError, redact: Redactor
) -> None:
    reason = f"events[{index}].{exc}"
    found.rejected.append({"index": index, "reason": reason})
    found.reasons[exc.field] += 1
    # An erased user's payload is exactly what must not be kept: reason only.
    payload = "" if isinstance(exc, Suppressed) else failed_payload(redact.payload(raw))
    found.failures.append(Failure(reason=reason, field=exc.field, payload=payload, source=source))
