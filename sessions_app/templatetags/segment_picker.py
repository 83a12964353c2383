"""The segment picker of a page that filters (templates/sessions_app/_segments.html):
the person's and the shared segments of the page's site, each a link to this page with
its filters (the period kept), and what the save form posts: this page's filters."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import parse_qsl, urlencode

from django import template

from sessions_app.features.analysis import explorer
from sessions_app.features.segments import defs
from sessions_app.features.web import periods
from sessions_app.foundation.models import Site

register = template.Library()

LISTED = 30  # in the picker; the segments page lists them all


def _here(item: defs.Shown, only: tuple[str, ...] | list[str]) -> defs.Shown:
    """The segment as this page can apply it: its problem, or the filters the page lacks."""
    names = item.segment.filters if isinstance(item.segment.filters, dict) else {}
    missing = [name for name in names if name not in only]
    if item.problem or not missing:
        return item
    return replace(item, problem=f"this page does not filter by {', '.join(missing)}")


@register.simple_tag(takes_context=True)
def segment_picker(context: template.Context) -> dict[str, Any] | None:
    request, site = context.get("request"), context.get("site")
    if request is None or not isinstance(site, Site) or not request.user.is_authenticated:
        return None
    params = {k: str(v) for k, v in request.GET.items()}
    kept = {k: v for k, v in params.items() if k in periods.PARAMS and v}
    # A page that applies some filters only (Performance: device, country, browser) names
    # them; a segment using others is listed as not applicable there.
    only = context.get("segment_filters") or explorer.filter_names()
    filters = [(n, params[n]) for n in explorer.filter_names() if params.get(n) and n in only]
    items = [
        _here(item, only)
        for item in defs.shown(site, list(defs.visible(site, request.user)[:LISTED]))
    ]
    query = urlencode(filters)
    admin = defs.may_share(request.user, site)  # asked once for the whole list
    listed = [
        (item, "?" + urlencode({**kept, **dict(parse_qsl(item.query))}), item.query == query)
        for item in items
    ]
    return {
        "items": listed,
        "applied": any(applied for _, _, applied in listed),
        "filters": filters,
        "kept": list(kept.items()),
        "next": request.path,
        "can_share": admin,
        # the segments whose filters this page's may replace (theirs to change, valid)
        "changeable": [
            item.segment
            for item in items
            if not item.problem and defs.may_change(request.user, site, item.segment, admin=admin)
        ],
    }
