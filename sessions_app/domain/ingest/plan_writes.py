"""Apply plans: write their rows in replica-aware batches, and mark them applied."""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sessions_app.domain.aggregates.states import buckets_applied_late
from sessions_app.domain.ingest.plan import Plan, hours_after, hours_started_before
from sessions_app.domain.ingest.rows import (
    MAX_BATCH_ROWS,
    Row,
    event_groups,
    event_statements,
    partial_rows,
)
from sessions_app.domain.ingest.session_rows import session_rows
from sessions_app.domain.ingest.txlog import log_key, mark_params
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.batches import pack_by_replicas
from sessions_app.foundation.core.cql import bind, cassandra_session, prepare
from sessions_app.foundation.core.sendall import execute_all
from sessions_app.foundation.tables import transaction_log, user_events_by_bucket

PRESENT_CHUNK = 100


def user_events_present(
    *, site_id: uuid.UUID, partitions: dict[tuple[str, datetime], list[uuid.UUID]]
) -> set[uuid.UUID]:
    """Return which of these event ids are stored, per (user key, bucket) partition."""
    statement = prepare(user_events_by_bucket.SELECT_PRESENT)
    futures = [
        cassandra_session().execute_async(
            statement, (site_id, user_key, bucket, ids[start : start + PRESENT_CHUNK])
        )
        for (user_key, bucket), ids in partitions.items()
        for start in range(0, len(ids), PRESENT_CHUNK)
    ]
    return {row["event_id"] for future in futures for row in future.result()}


log = logging.getLogger(__name__)


def plan_apply(plan: Plan, *, wait_for_mark: bool = True) -> int:
    """Write a plan into every table, then mark its log entry applied; return statements.

    The collector does not wait for the mark (`wait_for_mark=False`): a mark that
    never lands only makes the redo task apply the plan again, which writes the
    same cells.
    """
    work = list(event_statements(plan.events))
    work.extend(row for _, row in session_rows(plan))
    work.extend(row for _, row in partial_rows(plan))
    execute_all(work)
    _reopen_late(plan)
    if plan.events:
        mark = prepare(transaction_log.MARK_APPLIED, idempotent=True, write=True)
        params = mark_params(plan)
        if wait_for_mark:
            cassandra_session().execute(mark, params)
        else:
            cassandra_session().execute_async(mark, params).add_errback(
                lambda exc: log.warning(
                    "applied mark of batch %s not written: %s", plan.batch_id, exc
                )
            )
    return len(work)


def _reopen_late(plan: Plan) -> None:
    """Reopen hours this plan was written into after their sealing time (the seal may
    have read them without it)."""
    if plan.events:
        hours = {timebuckets.floor(e.ts, timebuckets.Width.HOUR) for e in plan.events}
        hours |= hours_after(plan)  # later page views of its sessions: their paths changed
        hours |= hours_started_before(plan)  # sessions gone on: their visits' counters changed
        buckets_applied_late(site_id=plan.site_id, hours=hours)


APPLY_PARTITIONS_PER_BATCH = 10
APPLY_ROWS_PER_BATCH = 100


def plans_apply(plans: Sequence[Plan]) -> int:
    """Write several plans at once (the applier), then mark each applied; return statements.

    The same cells as `plan_apply` of each plan in turn: rows of one partition from
    every plan go together, and partitions that share their replicas are packed
    into unlogged batches (`batches.pack_by_replicas`), so twenty beacons cost a
    few requests instead of a hundred and sixty. Summaries keep their plan's write
    timestamp, so the newest plan's summary wins whatever the order. The marks go
    only once every row is written; on a failure nothing is marked, and the
    redo task applies those plans again.
    """
    partitions: dict[tuple[Any, ...], list[Row]] = event_groups(
        e for plan in plans for e in plan.events
    )
    for plan in plans:
        for key, row in session_rows(plan):
            partitions.setdefault(key, []).append(row)
        for key, row in partial_rows(plan):
            partitions.setdefault(key, []).append(row)
    work = pack_by_replicas(
        (
            [bind(statement, params) for statement, params in rows[start : start + MAX_BATCH_ROWS]]
            for rows in partitions.values()
            for start in range(0, len(rows), MAX_BATCH_ROWS)
        ),
        partitions_per_batch=APPLY_PARTITIONS_PER_BATCH,
        rows_per_batch=APPLY_ROWS_PER_BATCH,
    )
    execute_all(work)
    for plan in plans:
        _reopen_late(plan)
    mark = prepare(transaction_log.MARK_APPLIED, idempotent=True, write=True)
    marks: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for plan in plans:
        if plan.events:
            marks[log_key(plan)[:3]].append(bind(mark, mark_params(plan)))
    marked = pack_by_replicas(
        marks.values(),
        partitions_per_batch=APPLY_PARTITIONS_PER_BATCH,
        rows_per_batch=APPLY_ROWS_PER_BATCH,
    )
    execute_all(marked)
    return len(work) + len(marked)
