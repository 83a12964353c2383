"""Step log: the plan, the failed events and the request's counts in transaction_log,
failed_events and ingest_stats (domain/ingest/txlog.py): durable before the answer.

A request running longer than an erasure waits writes nothing (pipeline.py answers 503,
and the client's retry meets the suppression).
"""

from __future__ import annotations

from sessions_app.domain.ingest.context import Intake
from sessions_app.domain.ingest.txlog import log_write
from sessions_app.domain.ingest.versions import within_deadline


def log(intake: Intake) -> None:
    """Write the request's log entry, failed events and counts; keep the entry's payload."""
    within_deadline(intake.started)
    assert intake.stats is not None  # the plan step's
    intake.payload = log_write(
        intake.plan,
        site_id=intake.source.site.id,
        batch_id=intake.batch_id,
        received_at=intake.received_at,
        failures=intake.failures,
        stats=intake.stats,
    )
