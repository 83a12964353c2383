"""How a clicked element is counted: its label (a URL's page path is core/pagepaths.py's)."""

from __future__ import annotations

from typing import Any


def click_label(element: dict[str, Any] | None) -> str | None:
    """Return how a clicked element is counted: its selector, else its text, else its tag."""
    if not element:
        return None
    return element.get("selector") or element.get("text") or element.get("tag")
