"""Sites, their keys and the admin audit log; the bootstrap admin login."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache

from sessions_app.domain.ledger import sizing
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import (
    AdminAction,
    RedoWatermark,
    Site,
)
from sessions_app.foundation.models.sites import new_heatmap_salt, new_site_key

# The collector caches key -> site and every enabled site's origins this long.
SITE_CACHE_SECONDS = 30
ORIGINS_CACHE_KEY = "site-origins"  # Site.save forgets it


def site_create(*, name: str, origins: list[str], events_per_second: float = 10.0) -> Site:
    """Create a site with its allowed origins, a fresh tracker key and its shard count.

    The shard count keeps each hour partition of site_events_by_bucket inside the
    partition budget at the expected event rate (the sizing formula, a shard suffix).
    The redo task checks its transaction log from now on (nothing is logged before).
    """
    shards = sizing.shards_for(
        writes_per_second=events_per_second,
        row_bytes=settings.SITE_EVENT_ROW_BYTES,
        width=timebuckets.Width.HOUR,
    )
    site = Site.objects.create(name=name, allowed_origins=origins, event_shards=shards)
    start = timebuckets.floor(
        datetime.now(UTC) - settings.TXLOG_REDO_GRACE, timebuckets.Width.TEN_MINUTES
    )
    RedoWatermark.objects.create(site=site, redone_through=start)
    return site


@dataclass(frozen=True)
class AdminLogin:
    username: str
    password: str | None  # None: set earlier and not known here
    created: bool


def admin_ensure(*, username: str = "admin", password_file: Path) -> AdminLogin:
    """Create the admin login once; never change an existing user's password.

    The password comes from CLICKSTREAM_ADMIN_PASSWORD, else it is generated and
    kept in password_file (mode 0600) so later runs can print it again.
    """
    users = get_user_model()
    known = settings.CLICKSTREAM_ADMIN_PASSWORD or (
        password_file.read_text().strip() if password_file.exists() else ""
    )
    if users.objects.filter(username=username).exists():
        return AdminLogin(username, known or None, created=False)
    password = known or secrets.token_urlsafe(12)
    users.objects.create_superuser(username=username, email="", password=password)
    if not settings.CLICKSTREAM_ADMIN_PASSWORD:
        password_file.parent.mkdir(parents=True, exist_ok=True)
        password_file.write_text(password + "\n")
        password_file.chmod(0o600)
    return AdminLogin(username, password, created=True)


def admin_action_record(
    *, actor: Any, action: str, target: str, details: dict[str, Any] | None = None
) -> AdminAction:
    """Append one entry to the audit log: who did what to which target, and when."""
    user = actor if actor is not None and getattr(actor, "is_authenticated", False) else None
    return AdminAction.objects.create(
        actor=user,
        actor_name=user.get_username() if user is not None else "system",
        action=action,
        target=target[:200],
        details=details or {},
    )


def site_target(site: Site) -> str:
    return f"site {site.name} ({site.id})"


def site_saved_record(*, site: Site, actor: Any, created: bool, changed: list[str]) -> None:
    """Audit a site created or edited in the admin (the form saved it)."""
    admin_action_record(
        actor=actor,
        action="site.create" if created else "site.change",
        target=site_target(site),
        details={
            "changed": changed,
            "allowed_origins": list(site.allowed_origins),
            "redact_params": list(site.redact_params),
            "enabled": site.enabled,
            "event_shards": site.event_shards,
            "time_zone": site.time_zone,
            "vitals": site.vitals,
            "replay": site.replay,
            "replay_sample": site.replay_sample,
            "replay_exclude": list(site.replay_exclude),
        },
    )


def _forget_site_key(key: str) -> None:
    # This process's collector cache; other processes forget within SITE_CACHE_SECONDS.
    cache.delete(f"site-key:{key}")


def site_key_rotate(*, site: Site, actor: Any) -> str:
    """Give a site a fresh tracker key; the old one stops working (after ≤ 30 s of caches)."""
    old = site.key
    site.key = new_site_key()
    site.save(update_fields=["key"])
    _forget_site_key(old)
    admin_action_record(
        actor=actor,
        action="site.rotate_key",
        target=site_target(site),
        details={"old_key": old, "new_key": site.key},
    )
    return site.key


def site_disable(*, site: Site, actor: Any) -> None:
    """Stop accepting events for a site (its key answers 401); stored data is kept."""
    site.enabled = False
    site.save(update_fields=["enabled"])
    _forget_site_key(site.key)
    admin_action_record(actor=actor, action="site.disable", target=site_target(site))


def site_heatmap_salt_rotate(*, site: Site, actor: Any) -> None:
    """Give a site a fresh heatmap signing salt: every overlay token issued before is refused."""
    site.heatmap_salt = new_heatmap_salt()
    site.save(update_fields=["heatmap_salt"])
    admin_action_record(actor=actor, action="site.rotate_heatmap_salt", target=site_target(site))


def origins_of_enabled_sites() -> frozenset[str]:
    """Every enabled site's allowed origins (a preflight without ?site=), cached like keys.

    A preflight needs no key, so without this each one read every site from SQL.
    """
    origins = cache.get(ORIGINS_CACHE_KEY)
    if origins is None:
        rows = Site.objects.filter(enabled=True).values_list("allowed_origins", flat=True)
        origins = frozenset(o.rstrip("/") for allowed in rows for o in allowed)
        cache.set(ORIGINS_CACHE_KEY, origins, SITE_CACHE_SECONDS)
    return origins


def origin_allowed(site: Site | None, origin: str | None) -> bool:
    """Whether a request from `origin` may reach the site (the collector, the heatmap
    overlay): no origin is not a browser's cross-origin request."""
    if not origin:
        return True  # not a browser cross-origin request (server-side SDK, curl)
    if site is None:
        return False
    return origin.rstrip("/") in {o.rstrip("/") for o in site.allowed_origins}
