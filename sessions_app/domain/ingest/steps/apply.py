"""Step apply: write the plan to the tables in the request when nothing took it (no
applier alive, its queue full, Redis down, APPLY_QUEUE=false): the applier's writes
(domain/ingest/plan_writes.py) for this one plan. A failure leaves it to the redo: it is logged."""

from __future__ import annotations

import logging

from sessions_app.domain.ingest.context import Request
from sessions_app.domain.ingest.plan import Plan
from sessions_app.domain.ingest.plan_writes import plan_apply
from sessions_app.domain.ingest.steps.plan import plan_without_erased
from sessions_app.domain.ingest.versions import within_deadline

log = logging.getLogger(__name__)


def apply(request: Request, plan: Plan | None, queued: bool) -> None:
    """Write the plan now unless the applier queue took it."""
    if plan is None or queued:
        return
    try:
        within_deadline(request.started)
        plan_apply(plan_without_erased(plan), wait_for_mark=False)
    except Exception:  # the plan is in the log: the redo task finishes it
        log.exception("apply of batch %s failed; left for txlog_redo", request.batch_id)
