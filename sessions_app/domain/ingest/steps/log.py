"""Step log: the plan, the failed events and the request's counts in transaction_log,
failed_events and ingest_stats (domain/ingest/txlog.py): durable before the answer.

A request running longer than an erasure waits writes nothing (pipeline.py answers 503,
and the client's retry meets the suppression).
"""

from __future__ import annotations

from sessions_app.domain.ingest.context import Planned, Request
from sessions_app.domain.ingest.plan import Failure
from sessions_app.domain.ingest.txlog import log_write
from sessions_app.domain.ingest.versions import within_deadline


def log(request: Request, planned: Planned, failures: list[Failure]) -> bytes | None:
    """Write the request's log entry, failed events and counts; return the entry's payload
    (what the applier queue takes; None without a plan)."""
    within_deadline(request.started)
    return log_write(
        planned.plan,
        site_id=request.site.id,
        batch_id=request.batch_id,
        received_at=request.received_at,
        failures=failures,
        stats=planned.stats,
    )
