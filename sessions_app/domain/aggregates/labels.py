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
    if not element:
        return None
    text = element.get("text")
    if isinstance(text, str) and text.split():
        words = " ".join(text.split())
        return words if len(words) <= TEXT_CHARS else words[: TEXT_CHARS - 1] + "…"
    return click_label(element)
