"""Share links: made and revoked by a site's admins, opened by anyone holding the URL
(docs/sharing.md; who may open one: domain/accounts/share_links.py).

A link shows the site's dashboard and the reports chosen for it, read-only. Locked to
a segment, it carries a copy of the segment's filters: a viewer adds filters of their
own but cannot remove those, and a report that cannot apply them (Performance: web
vitals are not split by segment filters) cannot be chosen with them. Framing is off
unless origins are listed; a password-protected link cannot be embedded (browsers do
not send the cookie that remembers the password to a frame on another site).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth.hashers import make_password
from django.utils import timezone

from sessions_app.domain.accounts import share_links
from sessions_app.features.analysis import dashboard, explorer
from sessions_app.features.segments import defs as segments
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import ShareLink, Site

# What a link may open besides the dashboard, and what each needs of the link.
REPORTS = {"dashboard": "Dashboard", "performance": "Performance"}
UNFILTERED = {"performance"}  # reports that cannot apply a segment's filters
MAX_NAME = 100
MAX_LINKS = 100  # a site's links, revoked ones included
MAX_ORIGINS = 10
PASSWORD_MIN, PASSWORD_MAX = 8, 128
EXPIRES_DAYS_MAX = 3660


def link_name(value: Any) -> str:
    name = " ".join(str(value or "").split())
    if not name:
        raise RangeError("name", "a name, to tell who the link is for")
    if len(name) > MAX_NAME:
        raise RangeError("name", f"at most {MAX_NAME} characters")
    return name


def link_reports(values: Iterable[Any]) -> list[str]:
    """The dashboard and the chosen reports, in REPORTS' order."""
    chosen = {str(v) for v in values}
    unknown = sorted(chosen - set(REPORTS))
    if unknown:
        raise RangeError("reports", f"{unknown[0][:40]!r} is not one of {', '.join(REPORTS)}")
    return [r for r in REPORTS if r == "dashboard" or r in chosen]


def embed_origins(value: Any) -> list[str]:
    """Origins (scheme://host[:port]) separated by spaces, commas or lines."""
    text = str(value or "").replace(",", " ")
    found: list[str] = []
    for item in text.split():
        parts = urlsplit(item)
        if (
            parts.scheme not in ("http", "https")
            or not parts.hostname
            or parts.path not in ("", "/")
            or parts.query
            or parts.fragment
            or parts.username
            or any(c in item for c in "'\";<> *")
        ):
            raise RangeError(
                "embed_origins", f"{item[:60]!r} is not an origin like https://example.com"
            )
        origin = f"{parts.scheme}://{parts.netloc.lower()}"
        if origin not in found:
            found.append(origin)
    if len(found) > MAX_ORIGINS:
        raise RangeError("embed_origins", f"at most {MAX_ORIGINS} origins")
    return found


def link_password(value: Any) -> str:
    """The hash of a new password ("" for none)."""
    password = str(value or "")
    if not password:
        return ""
    if not PASSWORD_MIN <= len(password) <= PASSWORD_MAX:
        raise RangeError("password", f"{PASSWORD_MIN} to {PASSWORD_MAX} characters, or none")
    return make_password(password)


def link_expiry(value: Any, *, now: datetime) -> datetime | None:
    text = str(value or "").strip()
    if not text:
        return None
    if not text.isdigit() or not 1 <= int(text) <= EXPIRES_DAYS_MAX:
        raise RangeError("expires_days", f"a number of days from 1 to {EXPIRES_DAYS_MAX}, or none")
    return now + timedelta(days=int(text))


def link_create(
    *,
    site: Site,
    user: Any,
    name: Any,
    reports: Iterable[Any] = (),
    segment: Any = None,
    password: Any = "",
    origins: Any = "",
    expires_days: Any = None,
    now: datetime | None = None,
) -> ShareLink:
    """A new link of the site; RangeError naming the field that is wrong."""
    now = now or timezone.now()
    if ShareLink.objects.filter(site=site).count() >= MAX_LINKS:
        raise RangeError("name", f"at most {MAX_LINKS} links a site: delete revoked ones first")
    chosen = link_reports(reports)
    locked, segment_name = _locked(site, user, segment)
    if locked and UNFILTERED & set(chosen):
        raise RangeError("reports", "Performance cannot apply a segment's filters: not with one")
    hashed, framed = link_password(password), embed_origins(origins)
    if hashed and framed:
        raise RangeError("embed_origins", "a password-protected link cannot be embedded")
    return ShareLink.objects.create(
        site=site,
        name=link_name(name),
        slug=share_links.new_slug(),
        reports=chosen,
        filters=locked,
        segment_name=segment_name,
        password=hashed,
        embed_origins=framed,
        created_by=user,
        expires_at=link_expiry(expires_days, now=now),
    )


def _locked(site: Site, user: Any, segment: Any) -> tuple[dict[str, str], str]:
    """The filters (and name) of the segment the link is locked to, copied."""
    if segment in (None, ""):
        return {}, ""
    text = str(segment)
    found = segments.visible(site, user).filter(pk=int(text)).first() if text.isdigit() else None
    if found is None:
        raise RangeError("segment", "no such segment of this site")
    item = segments.shown(site, [found])[0]
    if item.problem:
        raise RangeError("segment", f"{found.name}: {item.problem}")
    return dict(found.filters), found.name


def link_revoke(link: ShareLink, *, now: datetime | None = None) -> None:
    if link.revoked_at is None:
        link.revoked_at = now or timezone.now()
        link.save(update_fields=["revoked_at"])


@dataclass(frozen=True)
class Listed:
    """A link as its site's page lists it."""

    link: ShareLink
    state: str  # "active", "expired" or "revoked"
    says: list[str]  # the locked filters as chips say them
    opens: list[str]  # the reports' names


def listed(site: Site, *, now: datetime | None = None) -> list[Listed]:
    links = ShareLink.objects.filter(site=site).select_related("created_by")[:MAX_LINKS]
    return [listed_one(link, now=now) for link in links]


def listed_one(link: ShareLink, *, now: datetime | None = None) -> Listed:
    now = now or timezone.now()
    state = "revoked" if link.revoked_at else "active" if link.usable_at(now) else "expired"
    opens = [REPORTS[r] for r in link.reports if r in REPORTS]
    return Listed(link, state, locked_says(link), opens)


def locked_says(link: ShareLink) -> list[str]:
    """The locked filters as the dashboard's chips say them ("Country is DE")."""
    try:
        return [chip.text for chip in dashboard.chips(dashboard.dashboard_filters(link.filters))]
    except RangeError:
        return [f"{name}={value}" for name, value in link.filters.items()]


def viewer_params(link: ShareLink, asked: Mapping[str, str]) -> tuple[dict[str, str], str] | None:
    """What a report of the link reads: the viewer's parameters with the locked filters
    over them (a viewer's value of a locked filter is ignored), and why the viewer's own
    filters were dropped, if they were: a bad one must not drop the lock with it (the
    page then shows the locked filters alone, never the whole site). None when the lock
    itself no longer reads as filters: such a link opens nothing."""
    merged = {**{k: v for k, v in asked.items() if k not in link.filters}, **link.filters}
    try:
        dashboard.dashboard_filters(merged)
    except RangeError as exc:
        names = set(explorer.filter_names())
        kept = {k: v for k, v in asked.items() if k not in names and k not in link.filters}
        locked = {**kept, **link.filters}
        try:
            dashboard.dashboard_filters(locked)
        except RangeError:
            return None
        return locked, f"{exc}; your filters are not applied"
    return merged, ""
