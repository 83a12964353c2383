"""Failed password logins, throttled per account and per client address in Redis.

A failure counts against the account (the user name as typed, case-folded, whether or
not such a user exists, so a lock tells nothing about existence) and against the
client address (`TRUSTED_PROXY_COUNT` picks the hop, as for the collector).
`LOGIN_FAILURES_PER_ACCOUNT` failures of an account, or `LOGIN_FAILURES_PER_IP` from an
address, within `LOGIN_FAILURE_WINDOW_SECONDS` lock it for `LOGIN_LOCKOUT_SECONDS`:
while locked every attempt is refused without checking the password, the right one
included, and does not extend the lock. A successful login clears its account's count.

The backend enforces it for every login that passes a request to `authenticate()` (the
login page and the admin's); the form turns a lock into a message. Redis keys hold
HMACs of the name and the address, never the values. With Redis unreachable, logins
are not throttled (logged), never refused.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest
from django.utils.crypto import salted_hmac
from redis.exceptions import RedisError

from sessions_app.domain.ingest.visit import client_ip
from sessions_app.foundation.core.redis_client import redis_client

log = logging.getLogger(__name__)
PREFIX = "cs:login:"
MESSAGES = {
    "account": "Too many failed logins for this account. Try again in {wait}.",
    "address": "Too many failed logins from your address. Try again in {wait}.",
}


@dataclass(frozen=True)
class Lock:
    """A lock in force: what it covers ("account" or "address") and its seconds left."""

    scope: str
    seconds: int

    def message(self) -> str:
        minutes = math.ceil(self.seconds / 60)
        wait = f"{minutes} minute{'s' * (minutes != 1)}" if self.seconds > 60 else "a minute"
        return MESSAGES[self.scope].format(wait=wait)


@dataclass(frozen=True)
class _Subject:
    scope: str
    key: str
    limit: int


def _subjects(username: str | None, request: HttpRequest | None) -> list[_Subject]:
    found = []
    if username:
        found.append(_Subject("account", _key("account", username.casefold()), _limit("ACCOUNT")))
    address = (
        client_ip(request.META, trusted_proxies=settings.TRUSTED_PROXY_COUNT) if request else None
    )
    if address:
        found.append(_Subject("address", _key("address", address), _limit("IP")))
    return [subject for subject in found if subject.limit > 0]


def _key(scope: str, value: str) -> str:
    digest = salted_hmac("sessions_app.login-throttle", value, algorithm="sha256").hexdigest()
    return f"{PREFIX}{scope}:{digest[:32]}"


def _limit(kind: str) -> int:
    return int(getattr(settings, f"LOGIN_FAILURES_PER_{kind}"))


def lock_find(username: str | None, request: HttpRequest | None) -> Lock | None:
    """Return the lock that refuses a login of this name from this request, if any."""
    subjects = _subjects(username, request)
    if not subjects:
        return None
    try:
        pipe = redis_client().pipeline(transaction=False)
        for subject in subjects:
            pipe.pttl(f"{subject.key}:lock")
        left = pipe.execute()
    except RedisError as exc:
        log.warning("login throttle skipped: Redis unavailable (%s)", exc)
        return None
    pairs = zip(subjects, left, strict=True)
    locks = [Lock(s.scope, math.ceil(ms / 1000)) for s, ms in pairs if ms > 0]
    return max(locks, key=lambda lock: lock.seconds, default=None)


def failure_record(username: str | None, request: HttpRequest | None) -> None:
    """Count a failed login against its account and address; lock what reached its limit."""
    subjects = _subjects(username, request)
    if not subjects:
        return
    window = settings.LOGIN_FAILURE_WINDOW_SECONDS
    try:
        client = redis_client()
        pipe = client.pipeline(transaction=False)
        for subject in subjects:
            pipe.incr(f"{subject.key}:failures")
            pipe.expire(f"{subject.key}:failures", window, nx=True)
        counts = pipe.execute()[::2]
        reached = [s for s, n in zip(subjects, counts, strict=True) if int(n) >= s.limit]
        if reached:
            pipe = client.pipeline(transaction=False)
            for subject in reached:
                pipe.set(f"{subject.key}:lock", 1, ex=settings.LOGIN_LOCKOUT_SECONDS)
                pipe.delete(f"{subject.key}:failures")
            pipe.execute()
            log.warning("login locked (%s) after %s failures", reached[0].scope, reached[0].limit)
    except RedisError as exc:
        log.warning("login failure not counted: Redis unavailable (%s)", exc)


def success_record(username: str | None) -> None:
    """Forget an account's failures after a successful login (the address's count stays)."""
    subjects = _subjects(username, None)
    try:
        if subjects:
            redis_client().delete(f"{subjects[0].key}:failures")
    except RedisError as exc:
        log.warning("login success not recorded: Redis unavailable (%s)", exc)


class ThrottledModelBackend(ModelBackend):
    """Django's model backend behind the login throttle.

    A call without a request (the test client's `login()`, code of this project) is not
    a web login and is not throttled.
    """

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        if request is None:
            return super().authenticate(request, username, password, **kwargs)
        if username is None:
            username = kwargs.get(self._username_field())
        if lock_find(username, request) is not None:
            raise PermissionDenied("login locked")  # authenticate() answers None at once
        user = super().authenticate(request, username, password, **kwargs)
        if user is None:
            failure_record(username, request)
        else:
            success_record(username)
        return user

    async def aauthenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """The async entry goes through the same throttle (Django's own skips authenticate)."""
        return await sync_to_async(self.authenticate)(request, username, password, **kwargs)

    @staticmethod
    def _username_field() -> str:
        return str(get_user_model().USERNAME_FIELD)


class ThrottledAuthenticationForm(AuthenticationForm):
    """The login form: a locked account or address gets a message saying so and for how
    long, in place of "wrong username or password"."""

    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "Wrong username or password.",
    }

    def clean(self) -> dict[str, Any]:
        try:
            return super().clean()
        except ValidationError as error:
            lock = lock_find(self.cleaned_data.get("username"), self.request)
            if lock is None:
                raise
            raise ValidationError(lock.message(), code="locked") from error
