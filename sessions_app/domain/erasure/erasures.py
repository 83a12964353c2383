"""Erasure on request: delete a user key's rows everywhere, reseal the aggregates, suppress it.

`erasure_request` records who asked and suppresses the key at once; `user_erase`
(run by the `erase_user` task) runs the job (`domain/erasure/job.py`) and leaves the receipt
in the same `ErasureRequest` row. Every read of the job pages by partition key (no
ALLOW FILTERING, `PAGE` rows a page); every delete names a whole partition or a full
primary key; the tables it clears are those with an erasure step in the registry.
Running it again is harmless: what was deleted is not found again, so the counts
add up to what was removed in all.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from typing import Any

from celery import current_app
from django.db import transaction
from django.utils import timezone

from sessions_app.domain.erasure.job import _Job
from sessions_app.domain.ledger import sites
from sessions_app.domain.sessions import lists
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import (
    ErasureRequest,
    Site,
    Suppression,
)

log = logging.getLogger(__name__)

# Looked up by name when a request is committed: tasks.py imports this module.
ERASE_TASK = "sessions_app.tasks.erase_user"


class ErasureError(ValueError):
    """The request cannot be accepted; the message names the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def erasure_request(*, site: Site, key: str, kind: str, requested_by: Any) -> ErasureRequest:
    """Record an erasure request, suppress the key at once and enqueue the job.

    The key is suppressed before the job runs, so beacons arriving while it waits
    in the queue are already rejected. The task is sent after the commit, so the
    worker always finds the row.
    """

    key = key.strip()
    if not key:
        raise ErasureError("key", "required")
    if len(key) > 256:
        raise ErasureError("key", "at most 256 characters")
    if kind not in (ErasureRequest.USER_ID, ErasureRequest.ANONYMOUS_ID):
        raise ErasureError("kind", "user_id or anonymous_id")
    with transaction.atomic():
        request = ErasureRequest.objects.create(
            site=site,
            key=key,
            kind=kind,
            requested_by=requested_by,
            requested_by_name=getattr(requested_by, "username", "") or "system",
            keys=[key],
        )
        Suppression.objects.get_or_create(site=site, key=key, defaults={"erasure": request})
        # The audit names the request, not the key: the key is what is being erased.
        sites.admin_action_record(
            actor=requested_by,
            action="erasure.request",
            target=f"site {site.name} ({site.id})",
            details={"erasure": str(request.pk), "kind": kind},
        )
        transaction.on_commit(lambda: current_app.tasks[ERASE_TASK].delay(str(request.pk)))
    log.info(
        "erasure %s (%s) on site %s requested by %s",
        request.pk,
        kind,
        site.pk,
        request.requested_by_name,
    )
    return request


# Runs of one request: a request whose task dies this often (the worker killed each
# time) is marked failed for an admin to look at, not started again forever.
MAX_ATTEMPTS = 5


def erasures_stalled(*, now: datetime, after: timedelta) -> list[ErasureRequest]:
    """Return requests still queued, or running, longer than `after` (a lost task); mark
    failed those that ran MAX_ATTEMPTS times already."""
    cutoff = timebuckets.as_utc(now) - after
    queued = ErasureRequest.objects.filter(state=ErasureRequest.QUEUED, created_at__lt=cutoff)
    running = ErasureRequest.objects.filter(state=ErasureRequest.RUNNING, started_at__lt=cutoff)
    running.filter(attempts__gte=MAX_ATTEMPTS).update(
        state=ErasureRequest.FAILED,
        error=f"stopped after {MAX_ATTEMPTS} runs that did not finish",
        finished_at=timezone.now(),
    )
    return list(queued) + list(running.filter(attempts__lt=MAX_ATTEMPTS))


def user_erase(*, request_id: uuid.UUID | str, now: datetime) -> ErasureRequest:
    """Erase a request's user keys from every table, reseal the aggregates; return the receipt.

    Idempotent: a done request is returned as is; a failed or interrupted one
    runs again from the start (what it already deleted is simply not found).
    """
    request = ErasureRequest.objects.select_related("site").get(pk=request_id)
    if request.state == ErasureRequest.DONE:
        return request
    job = _Job(request, timebuckets.as_utc(now))
    try:
        job.run()
    except Exception as exc:
        request.state = ErasureRequest.FAILED
        request.error = f"{type(exc).__name__}: {exc}"[:2000]
        request.finished_at = timezone.now()
        request.save(update_fields=["state", "error", "finished_at"])
        raise
    return request


def key_has_data(*, site: Site, key: str) -> bool:
    """Return whether the key has a session or an identity link on the site: what an
    erasure finds first (a key without either has nothing to erase)."""
    if lists.sessions_page(site_id=site.id, user_keys=[key], limit=1).sessions:
        return True
    return bool(lists.identity_links(site_id=site.id, user_id=key, limit=1))


def erasure_of_key(*, site: Site, key: str) -> ErasureRequest | None:
    """Return the erasure that suppressed this key of the site (its receipt says when it
    ran), None if the key was never erased."""
    found = Suppression.objects.select_related("erasure").filter(site=site, key=key).first()
    return found.erasure if found is not None else None
