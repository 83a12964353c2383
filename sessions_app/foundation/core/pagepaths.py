"""A URL's page path (pure): what page views are counted, matched and filtered by."""

from __future__ import annotations


def page_path(url: str | None) -> str | None:
    """A URL's path: no scheme, host, query string or fragment ("/" when it has none)."""
    if not url:
        return None
    rest = url.split("://", 1)[-1]
    path = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
    return path.split("?", 1)[0].split("#", 1)[0]
