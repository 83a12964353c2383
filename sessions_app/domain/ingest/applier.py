"""The applier: writes queued plans into the tables, many at once.

The collector answers as soon as a batch is in the transaction log; `coordination.finish`
then hands the plan's log payload to a Redis list, in the same round trip, while an
applier is alive (`ALIVE_KEY`, refreshed every loop) and the list is short. One or
more `manage.py run_applier` processes pop up to APPLIER_BATCH_PLANS plans at a
time and write them with `apply.plans_apply`: rows of one partition from every
plan together, partitions that share replicas in one unlogged batch. The Cassandra
node then handles a few large requests instead of eight small ones per beacon, and
the web workers never wait for the apply.

Redis is not the record: a plan lost from the list (Redis flushed or restarted, an
applier killed mid-write, a write that failed) is still unapplied in the log, and
`txlog_redo` applies it after TXLOG_REDO_GRACE. A plan that waited longer than
APPLY_QUEUE_MAX_AGE_SECONDS is left to that redo too: an erasure edits the log
and deletes ERASURE_SETTLE_SECONDS after suppressing a key, so a late write from a
stale queued copy could bring erased rows back.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from redis.exceptions import RedisError

from sessions_app.domain.ingest.coordination import ALIVE_KEY, INLINE_KEY, QUEUE_KEY
from sessions_app.domain.ingest.plan import Plan, plan_decode, plan_without
from sessions_app.domain.ingest.plan_writes import plans_apply
from sessions_app.domain.ingest.txlog import log_mark_applied
from sessions_app.domain.ledger import suppression
from sessions_app.foundation.core.redis_client import redis_client

log = logging.getLogger(__name__)
ALIVE_MS = 5_000  # an applier that has not looked at the queue for this long is gone
WAIT_SECONDS = 1  # longest wait for the first plan of a round (keeps ALIVE_KEY fresh)


@dataclass
class Round:
    """What one pass over the queue did."""

    popped: int = 0
    applied: int = 0
    stale: int = 0  # older than APPLY_QUEUE_MAX_AGE: left to the redo task
    failed: int = 0  # not written (Cassandra error): left to the redo task
    statements: int = 0


def max_age() -> timedelta:
    """How old a queued plan may be and still be applied from the queue."""
    settle = settings.ERASURE_SETTLE_SECONDS - settings.SUPPRESSION_CACHE_SECONDS - 1
    return timedelta(seconds=max(0, min(settings.APPLY_QUEUE_MAX_AGE_SECONDS, settle)))


def announce() -> None:
    """Tell collectors an applier is running (for ALIVE_MS)."""
    redis_client().set(ALIVE_KEY, os.getpid(), px=ALIVE_MS)


def retire() -> None:
    """Tell collectors to apply their plans themselves again (an applier is stopping)."""
    redis_client().delete(ALIVE_KEY)


def backlog() -> dict[str, int]:
    """Plans waiting, whether an applier is alive, and how many plans found none."""
    pipe = redis_client().pipeline()
    pipe.llen(QUEUE_KEY)
    pipe.exists(ALIVE_KEY)
    pipe.get(INLINE_KEY)
    queued, alive, inline = pipe.execute()
    return {"queued": int(queued), "alive": int(alive), "inline": int(inline or 0)}


def drain_once(*, wait: float = 0, limit: int | None = None) -> Round:
    """Pop up to `limit` queued plans (waiting up to `wait` s for the first), apply them."""
    limit = limit or settings.APPLIER_BATCH_PLANS
    client = redis_client()
    payloads: list[Any] = []
    if wait:
        first: Any = client.blpop([QUEUE_KEY], timeout=wait)
        if first is None:
            return Round()
        payloads.append(first[1])
        limit -= 1
    if limit > 0:
        rest: Any = client.lpop(QUEUE_KEY, limit)
        payloads.extend(rest or [])
    return apply_payloads(payloads)


def apply_payloads(payloads: list[bytes], *, now: datetime | None = None) -> Round:
    """Apply queued plans that are young enough, without erased keys' events; mark them."""
    done = Round(popped=len(payloads))
    if not payloads:
        return done
    oldest = (now or datetime.now(UTC)) - max_age()
    plans: list[Plan] = []
    emptied: list[Plan] = []
    by_site: dict[object, list[Plan]] = defaultdict(list)
    for payload in payloads:
        try:
            plan = plan_decode(payload)
        except Exception:  # not one of ours: nothing to write (its log entry is the record)
            log.exception("applier: a queued payload does not decode; dropped")
            done.failed += 1
            continue
        if plan.log_time < oldest:  # how long it waited, not how old its events are
            done.stale += 1
            continue
        by_site[plan.site_id].append(plan)
    for site_id, site_plans in by_site.items():
        suppressed = suppression.suppressed_keys(site_id=site_id)  # type: ignore[arg-type]
        for plan in site_plans:
            kept = plan_without(plan, suppressed) if suppressed else plan
            if plan.events and not kept.events:
                emptied.append(plan)  # nothing left to write: only the mark
            else:
                plans.append(kept)
    try:
        done.statements = plans_apply(plans) if plans else 0
        for plan in emptied:
            log_mark_applied(plan)
        done.applied = len(plans) + len(emptied)
    except Exception:
        done.failed += len(plans) + len(emptied)
        log.exception("applying %d queued plans failed; left for txlog_redo", done.failed)
    return done


def run(stop: threading.Event) -> Round:
    """Apply queued plans until `stop` is set; then retire and apply what is left."""
    total = Round()
    log.info(
        "applier %s: applying queued plans (%s a round)", os.getpid(), settings.APPLIER_BATCH_PLANS
    )
    while not stop.is_set():
        try:
            announce()
            _add(total, drain_once(wait=WAIT_SECONDS))
        except RedisError as exc:
            log.warning("applier: Redis unavailable (%s); retrying", exc)
            time.sleep(WAIT_SECONDS)
        except Exception:  # a round's plans are in the log: the redo writes them
            log.exception("applier: a round failed; going on")
            time.sleep(WAIT_SECONDS)
    try:
        retire()
        while True:  # collectors stop queueing within one round trip of retire()
            last = drain_once()
            _add(total, last)
            if not last.popped:
                break
    except RedisError:
        log.warning("applier: Redis unavailable at shutdown; the redo task applies the rest")
    log.info(
        "applier %s stopped: %d plans applied, %d stale, %d failed",
        os.getpid(),
        total.applied,
        total.stale,
        total.failed,
    )
    return total


def _add(total: Round, part: Round) -> None:
    total.popped += part.popped
    total.applied += part.applied
    total.stale += part.stale
    total.failed += part.failed
    total.statements += part.statements
