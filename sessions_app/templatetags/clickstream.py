"""Template filters for values that came from browsers, and the tags every site page's
range picker and nav share (the period and the filters travel in the URL)."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode, urlsplit

import orjson
from django import template
from django.urls import reverse
from django.utils.safestring import mark_safe

from sessions_app.domain import permissions
from sessions_app.domain.erasure import erasures
from sessions_app.domain.ledger import sizing
from sessions_app.features.analysis import explorer
from sessions_app.features.web import periods
from sessions_app.foundation import sources
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Site
from sessions_app.middleware import SITE_KEY

register = template.Library()
_CONTROL = re.compile(r"[\x00-\x20\x7f-\x9f]")


@register.filter
def safe_url(value: object) -> str | None:
    """Return the URL if it is http(s) once control characters are stripped, else None.

    Browsers ignore tabs, newlines and control characters inside a scheme
    ("java\\tscript:"), so they are removed before the check, not after.
    """
    if not isinstance(value, str):
        return None
    cleaned = _CONTROL.sub("", value)
    try:
        scheme = urlsplit(cleaned).scheme
    except ValueError:  # "http://[x" (an unclosed IPv6 host): not a link
        return None
    return cleaned if scheme.lower() in ("http", "https") else None


@register.filter
def source_name(value: object) -> str | None:
    """A stored source in its one spelling (foundation/sources.py): a session stored
    before ingest spelt it shows as the reports count it."""
    return sources.source_name(value) if isinstance(value, str) else None


@register.filter
def as_text(value: object) -> str:
    """Return a value a visitor sent as text: a string as it came, anything else as
    compact JSON (null, true, 1.5, [1,"a"], {"a":1,"b":2}) with its keys sorted, as
    the event's props are stored, so every page shows a value the same way."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()


@register.filter
def pairs(value: object) -> list[tuple[str, str]]:
    """Return an object a visitor sent (props, traits) as (name, value as text) pairs.

    Templates never iterate such a dict with `.items`: the template engine looks a key
    up before an attribute, so a property named "items" (a cart's) would be iterated
    instead, and "keys", "values" or "get" shadow their methods the same way.
    """
    if not isinstance(value, dict):
        return [] if value is None else [("", as_text(value))]
    return [(str(name), as_text(item)) for name, item in value.items()]


@register.filter
def duration(value: timedelta | float | None) -> str:
    """Render a duration (a timedelta or seconds) the one way pages write it: 4.2s under
    ten seconds, 42s, 7m 51s, 1h 02m, 2d 03h."""
    if value is None or value == "":
        return ""
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds < 10:
        return f"{max(seconds, 0):.1f}s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours:02d}h"


@register.filter
def elapsed(start: datetime | None, end: datetime | None) -> timedelta | None:
    """Return the time from start to end, for `duration` ({{ a|elapsed:b|duration }})."""
    return end - start if isinstance(start, datetime) and isinstance(end, datetime) else None


@register.filter
def number(value: object) -> str:
    """Render a count with thousands separators (12,345); a fraction keeps at most two
    decimals (1,234.5); text passes as it is."""
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if value.is_integer() else f"{value:,.2f}".rstrip("0").rstrip(".")
    return str(value)


@register.filter
def local(value: datetime | None, site: object = None) -> str:
    """Render an instant in the site's time zone ("2026-11-27 14:05"); without a site
    (the installation's pages) in UTC, said so ("2026-11-27 14:05 UTC")."""
    if not isinstance(value, datetime):
        return ""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    zone_name = getattr(site, "time_zone", None)
    if site is None or not zone_name:
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return value.astimezone(periods.site_zone(zone_name)).strftime("%Y-%m-%d %H:%M")


def path_of(value: object) -> str:
    """Return the path (and query) of a URL."""
    if not isinstance(value, str):
        return ""
    try:
        parts = urlsplit(value)
    except ValueError:  # an unclosed IPv6 host: show it as it came
        return value
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


@register.filter
def without_utm(value: object) -> str:
    """Return a page's URL as pages show it: its path and query without the utm_*
    parameters (the stored URL keeps them); the other parameters stay as they came."""
    if not value:
        return ""
    shown = path_of(value)
    path, _, query = shown.partition("?")
    kept = [p for p in query.split("&") if p and not p.split("=", 1)[0].lower().startswith("utm_")]
    return path + ("?" + "&".join(kept) if kept else "")


@register.filter
def size(value: float | None) -> str:
    """Render a byte count as the sizing guide writes sizes ("8.6 MB")."""
    return "" if value is None else sizing.format_size(value)


@register.filter
def is_admin(user: object) -> bool:
    """Return whether the user has the installation's admin role (admin-only navigation)."""
    return permissions.is_admin(user)


@register.filter
def site_admin(user: object, site: object) -> bool:
    """Return whether the user has the admin role on this site (for its settings link)."""
    site_id = getattr(site, "id", None)
    return site_id is not None and permissions.site_role(user, site_id) == permissions.ADMIN


@register.filter
def percent(value: float | None) -> str:
    """A share (0.1234) as a percentage with one decimal ("12.3%")."""
    return "" if value is None else f"{value * 100:.1f}%"


# --- the range picker and the nav (templates/sessions_app/_range.html, base.html) ---------

# A page's own parameters the picker keeps besides the filters (heatmaps' layout and
# element, funnels' breakdown, paths' anchor, activity's read strategy, cohorts' unit and
# events); a cursor belongs to one answer.
KEPT = (
    "vp",
    "element",
    "breakdown",
    "from_page",
    "to_page",
    "step",
    "outcome",
    "strategy",
    "unit",
    "first_event",
    "return_event",
)


def page_period(context: template.Context) -> periods.Period:
    """The period the page answered (its view's `period`), else the one its URL asks for
    in the site's zone (the default when the URL's is bad: the page says why itself)."""
    found = context.get("period")
    if isinstance(found, periods.Period):
        return found
    request = context.get("request")
    params = {k: str(v) for k, v in request.GET.items()} if request is not None else {}
    zone = periods.site_zone(getattr(context.get("site"), "time_zone", None))
    now = datetime.now(UTC)
    try:
        return periods.period_param(params, zone=zone, now=now)
    except RangeError:
        return periods.period_param({}, zone=zone, now=now)


def carried_filters(context: template.Context) -> list[tuple[str, str]]:
    """The explorer's filters set on the current URL, in filter_names() order."""
    request = context.get("request")
    if request is None:
        return []
    return [(n, str(request.GET[n])) for n in explorer.filter_names() if request.GET.get(n)]


@register.simple_tag(takes_context=True)
def nav_query(context: template.Context) -> str:
    """The query a site link carries: the page's period and its filters ("" for none)."""
    values = {**page_period(context).params(), **dict(carried_filters(context))}
    if values == {"period": periods.DEFAULT_PRESET}:
        return ""
    return "?" + urlencode(values)


@register.simple_tag(takes_context=True)
def range_state(context: template.Context) -> dict[str, Any]:
    """What _range.html shows: the period, its choices, the custom days and the hidden
    inputs that keep the filters and the page's own parameters. The comparison only on a
    page that includes it `with comparable=True` (one whose numbers it changes); elsewhere
    a chosen one is kept, hidden, for the next page."""
    period = page_period(context)
    comparable = bool(context.get("comparable"))
    request = context.get("request")
    kept = [(n, str(request.GET[n])) for n in KEPT if request is not None and request.GET.get(n)]
    local_last = (period.end - timedelta(microseconds=1)).astimezone(period.zone)
    return {
        "period": period,
        "presets": list(periods.PRESETS.items()),
        "compares": list(periods.COMPARES.items()),
        "first": (period.first_day or period.start.astimezone(period.zone).date()).isoformat(),
        "last": (period.last_day or local_last.date()).isoformat(),
        "today": datetime.now(UTC).astimezone(period.zone).date().isoformat(),
        "hidden": [*carried_filters(context), *kept],
        "days": periods.days_shown(period),
        "comparable": comparable,
        "default_compare": periods.DEFAULT_COMPARE,
        "compared": (
            periods.days_shown(compared) if comparable and (compared := period.comparison()) else ""
        ),
        "zone": str(period.zone),
    }


@register.simple_tag(takes_context=True)
def period_inputs(context: template.Context) -> list[tuple[str, str]]:
    """The period as (name, value) pairs for a page form's hidden inputs."""
    return list(page_period(context).params().items())


# --- the frame's navigation (templates/base.html) -------------------------------------------

# The site pages a switch to another site keeps (a page of one thing, a funnel or a
# session, goes to the other site's dashboard).
SWITCHABLE = ("dashboard", "sessions", "user-search", "funnels", "paths", "transitions", "heatmaps")
SWITCHER_MAX = 50


@register.simple_tag(takes_context=True)
def nav_site(context: template.Context) -> Site | None:
    """The site whose nav the frame shows: the page's own, else the last one this person
    opened (SiteContextMiddleware), if they may still see it."""
    found = context.get("site")
    if isinstance(found, Site):
        return found
    request = context.get("request")
    user = getattr(request, "user", None)
    session = getattr(request, "session", None)
    if user is None or session is None or not user.is_authenticated:
        return None
    try:
        remembered = uuid.UUID(str(session.get(SITE_KEY, "")))
    except ValueError:
        return None
    return permissions.visible_sites(user).filter(id=remembered).first()


@register.simple_tag(takes_context=True)
def site_switch(context: template.Context, current: Site) -> list[tuple[Site, str]]:
    """The sites the switcher lists (by name, at most SWITCHER_MAX) with the link of
    each: the same page of the other site where it has one, else its dashboard."""
    request = context.get("request")
    match = getattr(request, "resolver_match", None)
    name = match.url_name if match and match.namespace == "sessions_app" else None
    page = name if name in SWITCHABLE else "dashboard"
    sites = permissions.visible_sites(getattr(request, "user", None)).order_by("name")
    return [
        (s, reverse(f"sessions_app:{page}", args=[s.id]))
        for s in sites[:SWITCHER_MAX]
        if s.id != current.id
    ]


@register.simple_tag(takes_context=True)
def current(context: template.Context, *names: str) -> str:
    """' aria-current="page"' on the nav link of the page shown (its URL name, or the
    name of a page under it: a session under Sessions), else ""."""
    match = getattr(context.get("request"), "resolver_match", None)
    if match is None:
        return ""
    shown = match.view_name if match.namespace != "sessions_app" else match.url_name
    return mark_safe(' aria-current="page"') if shown in names else ""  # a constant


@register.simple_tag
def erased_on(site: Site, key: str) -> dict[str, Any] | None:
    """When this user key was erased ({"at", "done"}: done, else requested), None if never."""
    found = erasures.erasure_of_key(site=site, key=key)
    if found is None:
        return None
    done = found.state == found.DONE and found.finished_at is not None
    return {"at": found.finished_at if done else found.created_at, "done": done}
