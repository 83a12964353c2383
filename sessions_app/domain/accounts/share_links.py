"""Share links: who may open one, and how often (docs/sharing.md).

A link is a capability URL: its slug (22 URL-safe random characters, 128 bits) is the
secret, kept in the table so its admins can copy the URL again, as Plausible shows its
shared links. A link opens while neither revoked nor expired; anything else is 404, as
a slug that never existed. A password-protected link remembers a correct password in
the viewer's session, tied to the password's hash, so a new password locks it again.
Each link has SHARE_LINK_RATE requests a minute (a window per clock minute in Redis,
password attempts included); with Redis down the link answers unmetered.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.hashers import check_password
from django.utils import timezone
from django.utils.crypto import constant_time_compare, salted_hmac

from sessions_app.domain.accounts.rates import Rate, window_take
from sessions_app.domain.accounts.tokens import LAST_USED_EVERY
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import ShareLink

SLUG_BYTES = 16
SLUG_MAX = 32


def new_slug() -> str:
    return secrets.token_urlsafe(SLUG_BYTES)


def link_open(slug: str, *, now: datetime | None = None) -> ShareLink | None:
    """The usable link of this slug, its last use noted; None for any other slug."""
    if not slug or len(slug) > SLUG_MAX:
        return None
    now = now or timezone.now()
    link = ShareLink.objects.select_related("site").filter(slug=slug).first()
    if link is None or not link.usable_at(now):
        return None
    if link.last_used_at is None or now - link.last_used_at >= LAST_USED_EVERY:
        ShareLink.objects.filter(pk=link.pk).update(last_used_at=now)
    return link


def rate_take(link: ShareLink, *, now: datetime | None = None) -> Rate | None:
    """Count one request of the link in its minute; None when Redis cannot count it."""
    start = timebuckets.epoch_minute(now or timezone.now()) * 60
    key = f"share-rate:{link.slug}"
    return window_take(key, limit=settings.SHARE_LINK_RATE, start=start, seconds=60)


def _unlock_key(link: ShareLink) -> str:
    return f"share-unlocked:{link.pk}"


def _unlock_value(link: ShareLink) -> str:
    return salted_hmac("clickstream.share-unlock", link.password).hexdigest()


def unlocked(link: ShareLink, session: Any) -> bool:
    """Whether this viewer may see the link: it has no password, or the viewer gave the
    current one."""
    if not link.password:
        return True
    return constant_time_compare(session.get(_unlock_key(link), ""), _unlock_value(link))


def unlock(link: ShareLink, session: Any, password: str) -> bool:
    """Check a password; a right one is remembered in the viewer's session."""
    if not link.password or not check_password(password, link.password):
        return False
    session[_unlock_key(link)] = _unlock_value(link)
    return True
