"""Replay the transaction log: re-apply entries that were logged but never marked applied."""

from __future__ import annotations

import logging
from datetime import datetime

from django.conf import settings

from sessions_app.core import timebuckets
from sessions_app.erasure import suppression
from sessions_app.ingest import txlog
from sessions_app.ingest.apply import plan_apply
from sessions_app.ingest.pipeline import _touch_buckets
from sessions_app.ingest.plan import (
    plan_decode,
    plan_without,
)
from sessions_app.ingest.txlog import log_mark_applied
from sessions_app.models import ReplayWatermark, Site

log = logging.getLogger(__name__)


def txlog_replay(*, now: datetime, max_buckets: int = 24) -> int:
    """Apply transaction-log entries that were never marked applied; return how many.

    Each site's log is scanned from its watermark up to now minus the replay
    grace (entries younger than that may still be applying), at most
    `max_buckets` log buckets per site per run; the watermark then advances.
    Events, sessions and links of suppressed (erased) user keys are dropped from
    each plan before it is applied, so a replay never brings them back.

    An entry that fails to apply is logged and does not stop the others, nor other
    sites: the watermark stops before its bucket, so the next run tries it again,
    until the entry is older than TXLOG_REPLAY_WINDOW — then it is reported as given
    up (logged at ERROR with its batch id; it stays in the log until its TTL) and
    the watermark moves past it, so one entry cannot stall a site's replay for good.
    """
    now = timebuckets.as_utc(now)
    horizon = timebuckets.floor(now - settings.TXLOG_REPLAY_GRACE, timebuckets.Width.TEN_MINUTES)
    give_up_before = now - settings.TXLOG_REPLAY_WINDOW
    replayed = 0
    for site in Site.objects.all():
        mark = ReplayWatermark.objects.filter(site=site).first()
        start = mark.replayed_through if mark else horizon - settings.TXLOG_REPLAY_WINDOW
        scanned = timebuckets.buckets_between(start, now, timebuckets.Width.TEN_MINUTES)[
            :max_buckets
        ]
        blocked: datetime | None = None  # the first bucket with an entry to try again
        try:
            suppressed = suppression.suppressed_keys(site_id=site.id)
            for bucket in scanned:
                for entry in txlog.txlog_unapplied(
                    site_id=site.id,
                    minute=bucket,
                    shards=settings.TXLOG_SHARDS,
                    received_before=now - settings.TXLOG_REPLAY_GRACE,
                ):
                    failed = _replay_entry(site, entry, suppressed)
                    if failed is None:
                        replayed += 1
                    elif bucket >= give_up_before:
                        blocked = blocked or bucket
                    else:
                        log.error(
                            "giving up on transaction-log entry %s (site %s, %s): it failed "
                            "to apply for longer than the replay window",
                            failed,
                            site.id,
                            bucket.isoformat(),
                        )
        except Exception:  # this site's log could not be read: the next run tries again
            log.exception("replay of site %s stopped; its watermark stays", site.id)
            continue
        # Only buckets fully behind the horizon (and before a retry) are done.
        done = [
            b
            for b in scanned
            if timebuckets.next_start(b, timebuckets.Width.TEN_MINUTES) <= horizon
            and (blocked is None or b < blocked)
        ]
        if done:
            through = timebuckets.next_start(done[-1], timebuckets.Width.TEN_MINUTES)
            ReplayWatermark.objects.update_or_create(
                site=site, defaults={"replayed_through": through}
            )
    return replayed


def _replay_entry(site: Site, payload: bytes, suppressed: frozenset[str]) -> str | None:
    """Apply one unapplied log entry; None, or the batch id (logged) if it failed."""
    batch = "(undecodable)"
    try:
        plan = plan_decode(payload)
        batch = str(plan.batch_id)
        kept = plan_without(plan, suppressed) if suppressed else plan
        _touch_buckets(site, kept)  # in case the request died before it did
        plan_apply(kept)
        if plan.events and not kept.events:  # nothing left to apply: mark it
            log_mark_applied(plan)
    except Exception:
        log.exception("replay of transaction-log entry %s failed", batch)
        return batch
    return None
