"""The notes of a page's time chart (sessions_app/_annotations.html): the period's
annotations of the page's site for the chart's markers and the list under it, and what
the "Add note" form needs (the site's today, this page to come back to)."""

from __future__ import annotations

from typing import Any

from django import template

from sessions_app.features.annotations import notes
from sessions_app.features.web import periods
from sessions_app.foundation.models import Site

register = template.Library()


@register.simple_tag(takes_context=True)
def chart_notes(context: template.Context, public_only: bool = False) -> dict[str, Any] | None:
    """None when the page has no site or period; `public_only` (a share link's page): the
    public notes alone, without authors or the form."""
    request, site, period = context.get("request"), context.get("site"), context.get("period")
    if request is None or not isinstance(site, Site) or not isinstance(period, periods.Period):
        return None
    public_only = public_only or context.get("share") is not None  # a share link's page
    if public_only:
        items = notes.for_chart(site, period, public_only=True)
    elif request.user.is_authenticated:
        items = notes.chart_items(site, period, request.user)
    else:
        return None
    return {
        "items": items,
        "island": {"zone": periods.site_zone(site.time_zone).key, "notes": items},
        "public_only": public_only,
        "today": notes.today(site).isoformat(),
        "next": request.get_full_path(),
        "max_note": notes.MAX_NOTE,
    }
