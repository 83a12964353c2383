"""Template filters for values that came from browsers, and the tags every site page's
range picker and nav share (the period and the filters travel in the URL)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode, urlsplit

import orjson
from django import template

from sessions_app import periods, permissions
from sessions_app.analysis import explorer
from sessions_app.core.bounds import RangeError
from sessions_app.ledger import sizing

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
def duration(value: timedelta | None) -> str:
    """Render a timedelta as 1h 02m 03s / 2m 05s / 4.2s."""
    if value is None:
        return ""
    seconds = value.total_seconds()
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


@register.filter
def iso(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value else ""


@register.filter
def path_of(value: object) -> str:
    """Return the path (and query) of a URL for compact display."""
    if not isinstance(value, str):
        return ""
    try:
        parts = urlsplit(value)
    except ValueError:  # an unclosed IPv6 host: show it as it came
        return value
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


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

# A page's own parameters the picker keeps besides the filters (heatmaps' layout, funnels'
# breakdown, paths' anchor, activity's read strategy); a cursor belongs to one answer.
KEPT = ("vp", "breakdown", "from_page", "to_page", "step", "outcome", "strategy")


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
    inputs that keep the filters and the page's own parameters."""
    period = page_period(context)
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
        "compared": periods.days_shown(compared) if (compared := period.comparison()) else "",
        "zone": str(period.zone),
    }


@register.simple_tag(takes_context=True)
def period_inputs(context: template.Context) -> list[tuple[str, str]]:
    """The period as (name, value) pairs for a page form's hidden inputs."""
    return list(page_period(context).params().items())
