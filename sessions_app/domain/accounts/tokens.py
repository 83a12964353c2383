"""API tokens: made with a name and an optional expiry, shown once, stored as a digest.

A key is `cst_` + 40 URL-safe random characters (240 bits), so one unsalted SHA-256
is enough to make the stored digest useless to whoever reads the table: nobody can
guess a key to match it. A request's key is hashed and looked up by that digest.

A token's scope names its sites (none: every site its user sees) and whether it only
reads; each token has API_TOKEN_RATE requests an hour (a window per clock hour, counted
in Redis; Plausible allows 600 an hour). With Redis down the requests are not counted
rather than refused: the API answers, unmetered, until it is back.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from sessions_app.domain.accounts.rates import Rate, window_take
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import ApiToken

KEY_PREFIX = "cst_"
NAME_MAX = 100
EXPIRES_DAYS_MAX = 3660
# last_used_at is written at most this often per token (not on every request).
LAST_USED_EVERY = timedelta(minutes=1)


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class NewToken:
    token: ApiToken
    key: str  # shown once; only its digest is stored


def token_create(
    *,
    user: Any,
    name: str,
    expires_days: int | None = None,
    now: datetime | None = None,
    sites: Iterable[Any] = (),
    read_only: bool = False,
) -> NewToken:
    """Make a token for the user (for `sites` alone, if any: sites the user sees; only
    reading, if `read_only`); the key is in the result and nowhere else."""
    name = name.strip()[:NAME_MAX]
    if not name:
        raise ValueError("name: required")
    if expires_days is not None and not 1 <= expires_days <= EXPIRES_DAYS_MAX:
        raise ValueError(f"expires in days: between 1 and {EXPIRES_DAYS_MAX}, or never")
    now = now or timezone.now()
    key = KEY_PREFIX + secrets.token_urlsafe(30)
    token = ApiToken.objects.create(
        user=user,
        name=name,
        digest=key_digest(key),
        prefix=key[: len(KEY_PREFIX) + 6],
        expires_at=now + timedelta(days=expires_days) if expires_days else None,
        read_only=read_only,
    )
    token.sites.set(list(sites))
    return NewToken(token=token, key=key)


def token_reaches(token: ApiToken, site_id: uuid.UUID) -> bool:
    """Whether the token's scope names the site (a token naming none reaches every one
    its user sees)."""
    named = {site.pk for site in token.sites.all()}
    return not named or site_id in named


def rate_take(token: ApiToken, *, now: datetime | None = None) -> Rate | None:
    """Count one request of the token in its hour; None when Redis cannot count it."""
    start = int(timebuckets.floor(now or timezone.now(), timebuckets.Width.HOUR).timestamp())
    # the digest: a test database reuses pks
    key = f"api-rate:{token.digest[:24]}"
    return window_take(key, limit=settings.API_TOKEN_RATE, start=start, seconds=3600)


def token_authenticate(key: str, *, now: datetime | None = None) -> ApiToken | None:
    """The usable token of this key (not revoked, not expired, its user active), or None."""
    now = now or timezone.now()
    token = ApiToken.objects.select_related("user").filter(digest=key_digest(key)).first()
    if token is None or not token.usable_at(now) or not token.user.is_active:
        return None
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


def tokens_of(user: Any) -> QuerySet[ApiToken]:
    """The user's tokens that are not revoked, newest first (expired ones too)."""
    return ApiToken.objects.filter(user=user, revoked_at__isnull=True).order_by("-created_at")


def token_revoke(*, user: Any, token_id: int, now: datetime | None = None) -> bool:
    """Revoke one of the user's own tokens; False if the user has no such token."""
    revoked = tokens_of(user).filter(pk=token_id).update(revoked_at=now or timezone.now())
    return revoked > 0


def tokens_revoke_named(*, user: Any, name: str, now: datetime | None = None) -> int:
    """Revoke the user's tokens of this name (a rotation); how many were revoked."""
    return (
        tokens_of(user)
        .filter(name=name.strip()[:NAME_MAX])
        .update(revoked_at=now or timezone.now())
    )
