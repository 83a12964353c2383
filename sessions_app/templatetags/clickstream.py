"""Template filters for values that came from browsers."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import orjson
from django import template

from sessions_app import permissions
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
