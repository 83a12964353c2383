"""The collector's write path: named steps, run in order and timed by name.

`events_record` is the one entry point for every source (the tracker's /collect, the
Segment-compatible /v1 endpoints, generate_clicks). Each step is one module of
ingest/steps/ and reads and adds to the request's `Intake`:

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
from typing import Any

from sessions_app.domain.ingest import coordination
from sessions_app.domain.ingest.context import Intake, Outcome, Source, StorageUnavailable
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

Step = Callable[[Intake], None]

# Until the log write the request can still fail: the claim is released and the client
# told to retry (503). From the queue on, the batch is accepted whatever happens.
RECORD: tuple[Step, ...] = (validate, dedupe, enrich, sessionize, plan, log)
HAND_OFF: tuple[Step, ...] = (queue, buckets, apply)
STEPS = RECORD + HAND_OFF

__all__ = ["STEPS", "Outcome", "Source", "StorageUnavailable", "events_record"]


def events_record(*, source: Source, raw_events: Sequence[Any]) -> Outcome:
    """Validate, dedupe, sessionize and durably record one request's events."""
    started = time.monotonic()
    received_at = timebuckets.as_utc(source.received_at)
    batch_id = time_uuid(received_at, uuid.uuid4().hex)
    intake = Intake(
        source=source,
        raw_events=raw_events,
        received_at=received_at,
        batch_id=batch_id,
        started=started,
        outcome=Outcome(batch_id=batch_id),
    )
    try:
        for step in RECORD:
            _timed(step, intake)
    except Exception as exc:
        if intake.claim is None:  # nothing claimed yet: nothing to release
            raise
        coordination.abandon(intake.claim)
        if isinstance(exc, StorageUnavailable):
            raise
        raise StorageUnavailable(f"Cassandra: {type(exc).__name__}: {exc}") from exc
    for step in HAND_OFF:
        _timed(step, intake)
    return intake.outcome


def _timed(step: Step, intake: Intake) -> None:
    began = time.perf_counter()
    step(intake)
    intake.outcome.timings[step.__name__] = time.perf_counter() - began
