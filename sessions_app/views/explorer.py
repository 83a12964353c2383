"""The session explorer page: a filter form (its URL is the shareable filter) and the sessions."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from sessions_app.domain.goals.defs import MAX_GOALS
from sessions_app.domain.permissions import site_page
from sessions_app.features.analysis import explorer
from sessions_app.features.replays.player import replays_mark
from sessions_app.features.web import periods
from sessions_app.features.web.params import query_params
from sessions_app.foundation import dimensions
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Goal, Site


@site_page()
def session_explorer(request: HttpRequest, site: Site) -> HttpResponse:
    """List the sessions matching the filter in the URL; a bad parameter answers 400
    with the field named (nothing is listed then)."""
    params = query_params(request)
    error, page, query = "", None, None
    try:
        zone = periods.site_zone(site.time_zone)
        query = explorer.explorer_query_parse(params, now=datetime.now(UTC), zone=zone)
        page = explorer.sessions_explore(
            site_id=site.id, query=query, cursor=params.get("cursor") or None
        )
        replays_mark(site, page.sessions)
    except RangeError as exc:
        error = str(exc)
    shown = query.params() if query else {k: v for k, v in params.items() if k != "cursor"}
    context = {
        "site": site,
        "error": error,
        "page": page,
        "values": shown,
        "next_url": (
            "?" + urlencode({**shown, "cursor": page.next_cursor})
            if page and page.next_cursor
            else None
        ),
        "share_url": request.build_absolute_uri("?" + urlencode(shown)),
        "fields": [(d, shown.get(d.name, "")) for d in dimensions.filters()],
        "goals": Goal.objects.filter(site=site).only("name")[:MAX_GOALS],
        "period": query.period if query else None,
        "range_note": query.note if query else "",
    }
    return render(
        request, "sessions_app/session_explorer.html", context, status=400 if error else 200
    )
