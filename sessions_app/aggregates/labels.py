"""How a URL and a clicked element are counted: a page path and an element label."""

from __future__ import annotations

from typing import Any

from sessions_app.core.pagepaths import page_path

__all__ = ["click_label", "page_path"]


def click_label(element: dict[str, Any] | None) -> str | None:
    """Return how a clicked element is counted: its selector, else its text, else its tag."""
    if not element:
        return None
    return element.get("selector") or element.get("text") or element.get("tag")
