"""How a URL and a clicked element are counted: a page path and an element label."""

from __future__ import annotations

from typing import Any


def page_path(url: str | None) -> str | None:
    """A URL's path: no scheme, host, query string or fragment ("/" when it has none)."""
    if not url:
        return None
    rest = url.split("://", 1)[-1]
    path = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
    return path.split("?", 1)[0].split("#", 1)[0]


def click_label(element: dict[str, Any] | None) -> str | None:
    """Return how a clicked element is counted: its selector, else its text, else its tag."""
    if not element:
        return None
    return element.get("selector") or element.get("text") or element.get("tag")
