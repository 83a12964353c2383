"""Suppressed keys: erased users whose events the collector and the replay refuse."""

from __future__ import annotations

import time
import uuid

from django.conf import settings

from sessions_app.foundation.models import Suppression

_suppressed: dict[uuid.UUID, tuple[float, frozenset[str]]] = {}


def suppressed_keys(*, site_id: uuid.UUID) -> frozenset[str]:
    """Return the site's suppressed user keys (erased on request), cached per process.

    The collector asks once per request, so the set is loaded from SQL at most
    once every SUPPRESSION_CACHE_SECONDS per process and site; an erasure waits
    longer than that (ERASURE_SETTLE_SECONDS) before deleting anything.
    """
    now = time.monotonic()
    cached = _suppressed.get(site_id)
    if cached is not None and now - cached[0] < settings.SUPPRESSION_CACHE_SECONDS:
        return cached[1]
    keys = frozenset(Suppression.objects.filter(site_id=site_id).values_list("key", flat=True))
    _suppressed[site_id] = (now, keys)
    return keys


def suppressed_keys_forget(*, site_id: uuid.UUID) -> None:
    """Drop this process's cached suppression list of a site (the next check reloads it)."""
    _suppressed.pop(site_id, None)
