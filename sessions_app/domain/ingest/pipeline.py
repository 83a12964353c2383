"""The collector's write path: named steps, run in order and timed by name.

`events_record` is the one entry point for every source (the tracker's /collect, the
Segment-compatible /v1 endpoints, generate_clicks), and its body is the story of a
request. Each step is one module of ingest/steps/: it takes what it needs and returns
what it made (domain/ingest/context.py), in this order:

    validate → dedupe → enrich → sessionize → plan → log → queue → buckets → apply

The accepted batch is in the transaction log (step log) before the answer; then it is
handed to the applier queue (step queue, when an applier runs) or written to the tables
(step apply). A failure after the log write is repaired by `txlog_redo`, which
re-applies unapplied entries. Each step's time is in `Outcome.timings`, by its name;
`make profile` (bench/profile.py) attributes CPU samples to the same names.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from sessions_app.domain.ingest.context import (
    Outcome,
    Request,
    Source,
    StorageUnavailable,
    released_on_failure,
)
from sessions_app.domain.ingest.steps.apply import apply
from sessions_app.domain.ingest.steps.buckets import buckets
from sessions_app.domain.ingest.steps.dedupe import dedupe
from sessions_app.domain.ingest.steps.enrich import enrich
from sessions_app.domain.ingest.steps.log import log
from sessions_app.domain.ingest.steps.plan import plan
from sessions_app.domain.ingest.steps.queue import queue
from sessions_app.domain.ingest.steps.sessionize import sessionize
from sessions_app.domain.ingest.steps.validate import validate
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.ids import time_uuid

STEPS = (validate, dedupe, enrich, sessionize, plan, log, queue, buckets, apply)

__all__ = ["STEPS", "Outcome", "Source", "StorageUnavailable", "events_record"]

T = TypeVar("T")


def events_record(*, source: Source, raw_events: Sequence[Any]) -> Outcome:
    """Validate, dedupe, sessionize and durably record one request's events."""
    started = time.monotonic()
    received_at = timebuckets.as_utc(source.received_at)
    request = Request(
        source=source,
        received_at=received_at,
        batch_id=time_uuid(received_at, uuid.uuid4().hex),
        started=started,
    )
    step = _Timed()
    validated = step(validate, request, raw_events)
    deduped = step(dedupe, request.site.id, validated.candidates)
    # Until the log write a failure releases the claim and asks the client to retry; from
    # the queue on, the batch is accepted whatever happens.
    with released_on_failure(deduped.claim):
        enriched = step(enrich, source, deduped.fresh)
        sessions = step(
            sessionize, request.site.id, deduped.fresh, enriched.visits, deduped.current
        )
        planned = step(plan, request, len(raw_events), validated, deduped, sessions)
        payload = step(log, request, planned, validated.failures)
    queued = step(queue, request, deduped, enriched, sessions, payload)
    step(buckets, request.site, planned.plan)
    step(apply, request, planned.plan, queued)
    stats = planned.stats
    return Outcome(
        accepted=stats.accepted,
        duplicates=stats.duplicates,
        late=stats.late,
        clamped=stats.clamped,
        rejected=validated.rejected,
        batch_id=request.batch_id,
        queued=queued,
        timings=step.timings,
    )


class _Timed:
    """Runs a step and keeps its time under the step's name."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    def __call__(self, run: Callable[..., T], *args: Any) -> T:
        began = time.perf_counter()
        made = run(*args)
        self.timings[run.__name__] = time.perf_counter() - began
        return made
