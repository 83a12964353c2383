"""Redo the transaction log: re-apply entries that were logged but never marked applied.

The guarantee: an acknowledged batch is in its tables within TXLOG_REDO_GRACE plus
one beat (the task runs every minute) of its log write, whoever wrote it and whether
or not an applier ran. What cannot be applied is never passed over: it stays an
UnappliedLogEntry, retried every run until it applies or its log TTL ends, counted
by `redo_backlog` (/healthz/deep) and logged at ERROR once older than
TXLOG_REDO_WINDOW.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, Min

from sessions_app.domain.ingest import txlog
from sessions_app.domain.ingest.plan import plan_decode, plan_without
from sessions_app.domain.ingest.plan_writes import plan_apply
from sessions_app.domain.ingest.steps.buckets import plan_buckets_touch
from sessions_app.domain.ingest.txlog import LogEntry, log_mark_applied
from sessions_app.domain.ledger import policies, suppression
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import RedoWatermark, Site, UnappliedLogEntry
from sessions_app.foundation.tables import retention_specs

log = logging.getLogger(__name__)
MAX_RETRIES = 500  # known unapplied entries retried per site per run, oldest first


def log_ttl() -> timedelta:
    """How long a transaction-log entry lives (after that it can no longer be redone)."""
    return timedelta(seconds=policies.ttl_seconds(retention_specs.TRANSACTION_LOG))


def txlog_redo(*, now: datetime, max_buckets: int = 24, sites: Iterable[Site] | None = None) -> int:
    """Apply transaction-log entries that were never marked applied; return how many.

    Every site's log by default; `sites` narrows the run to those (a test redoes its own).

    Per site: first retry the entries known unapplied, then scan the log from the
    watermark up to now minus the redo grace (younger entries may still be
    applying), at most `max_buckets` log buckets a run; the watermark then moves
    past the buckets fully behind that horizon. A site without a watermark (older
    than this bookkeeping) is scanned from the log's TTL on. Events, sessions and
    links of suppressed (erased) user keys are dropped from each plan first, so a
    redo never brings them back.

    An entry that fails to apply is logged and does not stop the others, nor other
    sites: it becomes an UnappliedLogEntry, so the watermark can move on without
    ever losing sight of it.
    """
    now = timebuckets.as_utc(now)
    redone = 0
    for site in Site.objects.all() if sites is None else sites:
        try:
            redone += _site_redo(site, now=now, max_buckets=max_buckets)
        except Exception:  # this site's log could not be read: the next run tries again
            log.exception("redo of site %s stopped; its watermark stays", site.id)
        _report_overdue(site, now=now)
    return redone


def _site_redo(site: Site, *, now: datetime, max_buckets: int) -> int:
    width = txlog.LOG_WIDTH
    horizon = timebuckets.floor(now - settings.TXLOG_REDO_GRACE, width)
    mark = RedoWatermark.objects.filter(site=site).first()
    oldest = timebuckets.floor(now - log_ttl(), width)
    start = max(mark.redone_through, oldest) if mark else oldest
    suppressed = suppression.suppressed_keys(site_id=site.id)
    redone = 0
    retried: set[uuid.UUID] = set()
    for known in UnappliedLogEntry.objects.filter(site=site).order_by("logged_at")[:MAX_RETRIES]:
        retried.add(known.batch_id)
        entry = txlog.txlog_entry(
            site_id=site.id, minute=known.minute, shard=known.shard, batch_id=known.batch_id
        )
        if entry is None or entry.applied:
            if entry is None and known.logged_at + log_ttl() <= now:
                log.error("transaction-log entry %s expired unapplied (site %s)", known, site.id)
            known.delete()
        elif (error := _redo_entry(site, entry, suppressed)) is None:
            known.delete()
            redone += 1
        else:
            _remember(site, entry, error)
    scanned = timebuckets.buckets_between(start, now, width)[:max_buckets]
    for bucket in scanned:
        for entry in txlog.txlog_unapplied(
            site_id=site.id,
            minute=bucket,
            shards=settings.TXLOG_SHARDS,
            received_before=now - settings.TXLOG_REDO_GRACE,
        ):
            if entry.batch_id in retried:
                continue
            if (error := _redo_entry(site, entry, suppressed)) is None:
                redone += 1
            else:
                _remember(site, entry, error)
    # Every entry of a bucket fully behind the horizon is now applied or remembered.
    done = [b for b in scanned if timebuckets.next_start(b, width) <= horizon]
    if done:
        RedoWatermark.objects.update_or_create(
            site=site, defaults={"redone_through": timebuckets.next_start(done[-1], width)}
        )
    return redone


def _redo_entry(site: Site, entry: LogEntry, suppressed: frozenset[str]) -> str | None:
    """Apply one unapplied log entry; None, or why it failed (logged)."""
    try:
        plan = plan_decode(entry.payload)
        kept = plan_without(plan, suppressed) if suppressed else plan
        plan_buckets_touch(site=site, plan=kept)  # in case the request died before it did
        plan_apply(kept)
        if plan.events and not kept.events:  # nothing left to apply: mark it
            log_mark_applied(plan)
    except Exception as exc:
        log.exception("redo of transaction-log entry %s failed", entry.batch_id)
        return f"{type(exc).__name__}: {exc}"[:500]
    return None


def _remember(site: Site, entry: LogEntry, error: str) -> None:
    known, created = UnappliedLogEntry.objects.get_or_create(
        site=site,
        minute=entry.minute,
        shard=entry.shard,
        batch_id=entry.batch_id,
        defaults={"logged_at": entry.logged_at, "error": error},
    )
    if not created:
        known.attempts += 1
        known.error = error
        known.save(update_fields=["attempts", "error", "updated_at"])


def _report_overdue(site: Site, *, now: datetime) -> None:
    """Log at ERROR the site's entries unapplied for longer than TXLOG_REDO_WINDOW."""
    late = UnappliedLogEntry.objects.filter(
        site=site, logged_at__lt=now - settings.TXLOG_REDO_WINDOW
    ).order_by("logged_at")
    oldest = late.first()
    if oldest is not None:
        log.error(
            "site %s: %d transaction-log entries unapplied for longer than the redo "
            "window, the oldest %s logged %s (%s); retried every run until the log TTL "
            "ends, see /healthz/deep",
            site.id,
            late.count(),
            oldest.batch_id,
            oldest.logged_at.isoformat(),
            oldest.error,
        )


def redo_backlog(*, now: datetime) -> dict[str, Any]:
    """Return what the redo has not applied yet: unapplied entries and how far behind it is.

    `ok` is false once an entry waited longer than TXLOG_REDO_WINDOW, or a site's
    log was last checked longer ago than that (the redo task is not running).
    """
    now = timebuckets.as_utc(now)
    window = settings.TXLOG_REDO_WINDOW
    found = UnappliedLogEntry.objects.aggregate(count=Count("pk"), oldest=Min("logged_at"))
    through = RedoWatermark.objects.aggregate(oldest=Min("redone_through"))["oldest"]
    oldest_age = (now - found["oldest"]).total_seconds() if found["oldest"] else 0.0
    behind = max(0.0, (now - through).total_seconds()) if through else 0.0
    limit = window.total_seconds()
    return {
        "ok": oldest_age <= limit and behind <= limit,
        "unapplied": found["count"],
        "oldest_unapplied_seconds": round(oldest_age),
        "behind_seconds": round(behind),
        "window_seconds": round(limit),
    }
