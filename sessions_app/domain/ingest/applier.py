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
LAG_WARN_EVERY = 60.0  # seconds between two lag warnings of one applier


@dataclass
class Round:
    """What one pass over the queue did."""

    popped: int = 0
    applied: int = 0
    stale: int = 0  # older than APPLY_QUEUE_MAX_AGE: left to the redo task
    failed: int = 0  # not written (Cassandra error): left to the redo task
    statements: int = 0
    waited: float = 0.0  # seconds the longest-waiting plan of the round was queued


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


def backlog(*, now: datetime | None = None) -> dict[str, Any]:
    """Plans waiting, whether an applier is alive, how many plans found none, and how
    long the oldest waiting plan has been queued (ms; 0 when none waits): the applier's
    lag, what a new event waits before it is visible beyond the live counters."""
    pipe = redis_client().pipeline()
    pipe.llen(QUEUE_KEY)
    pipe.exists(ALIVE_KEY)
    pipe.get(INLINE_KEY)
    pipe.lindex(QUEUE_KEY, 0)  # RPUSHed, LPOPped: the head waited longest
    queued, alive, inline, head = pipe.execute()
    return {
        "queued": int(queued),
        "alive": int(alive),
        "inline": int(inline or 0),
        "oldest_ms": _waited_ms(head, now or datetime.now(UTC)),
    }


def _waited_ms(payload: bytes | None, now: datetime) -> int | None:
    """How long a queued plan has waited, in ms (None: it does not decode)."""
    if payload is None:
        return 0
    try:
        plan = plan_decode(payload)
    except Exception:  # noqa: BLE001 - counted as failed when the applier pops it
        return None
    return max(0, round((now - plan.log_time).total_seconds() * 1000))


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
    popped_at = now or datetime.now(UTC)
    oldest = popped_at - max_age()
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
        done.waited = max(done.waited, (popped_at - plan.log_time).total_seconds())
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
    warned = -LAG_WARN_EVERY
    while not stop.is_set():
        try:
            announce()
            done = drain_once(wait=WAIT_SECONDS)
            _add(total, done)
            warned = lag_warn(done, warned=warned, now=time.monotonic())
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


def lag_warn(done: Round, *, warned: float, now: float) -> float:
    """Log a round whose longest-waiting plan waited over APPLIER_LAG_WARN_SECONDS, at
    most once every LAG_WARN_EVERY seconds; return when the last warning was (monotonic)."""
    if done.waited <= settings.APPLIER_LAG_WARN_SECONDS or now - warned < LAG_WARN_EVERY:
        return warned
    log.warning(
        "applier lag: a plan waited %.1f s in the queue (over %s s): new events are late in "
        "timelines and reports; add an applier (manage.py run_applier) or look at "
        "Cassandra's latency",
        done.waited,
        settings.APPLIER_LAG_WARN_SECONDS,
    )
    return now


def _add(total: Round, part: Round) -> None:
    total.waited = max(total.waited, part.waited)
    total.popped += part.popped
    total.applied += part.applied
    total.stale += part.stale
    total.failed += part.failed
    total.statements += part.statements
