"""The custom events the tracker and the SDKs send for the product's own use rather than
as the site's own events: a page view's web vitals, a page's leave (how far it was
scrolled) and an identify. Pages show them where they mean something (the performance
page, heatmaps' scroll depth, "identified as …"), never as the site's custom events."""

from __future__ import annotations

VITALS = "$vitals"
PAGELEAVE = "$pageleave"
IDENTIFY = "$identify"
INTERNAL = frozenset({VITALS, PAGELEAVE, IDENTIFY})


def internal(kind: str, name: str | None) -> bool:
    """Whether an event (its type and name) is one of the product's own."""
    return kind == "custom" and name in INTERNAL
