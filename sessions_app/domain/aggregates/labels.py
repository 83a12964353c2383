"""How a clicked element is counted: its label (a URL's page path is core/pagepaths.py's)."""

from __future__ import annotations

from typing import Any


def click_label(element: dict[str, Any] | None) -> str | None:
    """Return how a clicked element is counted on a page (heatmaps: where it is drawn): its
    selector, else its text, else its tag."""
    if not element:
        return None
    return element.get("selector") or element.get("text") or element.get("tag")


TEXT_CHARS = 80  # of an element's text in a top click's label


def click_name(element: dict[str, Any] | None) -> str | None:
    """Return how the site's top clicks name a clicked element: what it said (its text,
    spaces collapsed, as the timeline shows it), else its selector, else its tag. Buttons
    saying the same thing are one row, as an analyst reads them."""
    return click_text(element) or click_label(element)


def click_text(element: dict[str, Any] | None) -> str | None:
    """Return what a clicked element said: its text, spaces collapsed, at most TEXT_CHARS
    (None when it said nothing)."""
    text = element.get("text") if element else None
    if not isinstance(text, str) or not text.split():
        return None
    words = " ".join(text.split())
    return words if len(words) <= TEXT_CHARS else words[: TEXT_CHARS - 1] + "…"
