"""The sessions pages: the explorer, a session's timeline and its player."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.clickjacking import xframe_options_sameorigin

from sessions_app.domain.aggregates import vitals
from sessions_app.domain.goals.defs import MAX_GOALS
from sessions_app.domain.permissions import site_page
from sessions_app.domain.sessions import timeline
from sessions_app.features.analysis import explorer
from sessions_app.features.funnels import defs
from sessions_app.features.funnels.spec import funnel_compile
from sessions_app.features.replays.player import (
    player_data,
    player_island,
    player_policy,
    replays_mark,
    seek_param,
)
from sessions_app.features.vitals.views import value_text
from sessions_app.features.web import periods
from sessions_app.features.web.params import query_params
from sessions_app.foundation import dimensions
from sessions_app.foundation.core import eventnames, timebuckets
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.core.pagepaths import page_path
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


@site_page()
def session_timeline(request: HttpRequest, site: Site, session_id: uuid.UUID) -> HttpResponse:
    found = timeline.session_timeline(site_id=site.id, session_id=session_id)
    summary, events = found.decoded() if found is not None else (None, [])
    if not events:
        raise Http404("no such session")
    user_key = events[0]["user_key"]
    duration = events[-1]["ts"] - events[0]["ts"]
    funnel = _highlight(site, request.GET.get("funnel"), request.GET.get("chain"), events)
    error = ""
    try:
        seek = seek_param(request.GET.get("t"))
    except RangeError as exc:
        seek, error = None, f"{exc} (the link's moment is ignored)"
    replay = player_data(site, session_id, events, seek=seek)
    response = render(
        request,
        "sessions_app/session_timeline.html",
        {
            "site": site,
            "session_id": session_id,
            "user_key": user_key,
            "summary": summary,
            "groups": _pages(events),
            "duration": duration,
            "count": len(events),
            "funnel": funnel,
            "replay": replay,
            "error": error,
        },
    )
    return response  # the analyst pages' policy: the player is in a frame of its own


def _pages(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Group consecutive events by page URL, with time since start and since previous.

    A page view, or a URL other than the current page's, starts a group. An event
    without a URL (a server-side track or identify) happened while the page before
    it was current, so it joins that group; only the URL-less events before the
    session's first URL form a group of their own (url None).

    The product's own events are no rows: a page view's `$vitals` become its page's
    speeds and a `$pageleave` how far it was scrolled (both on the page's heading, which
    links to the page's performance); an `$identify` is a row that says who.
    """
    groups: list[dict[str, Any]] = []
    first = events[0]["ts"] if events else None
    previous = None
    for event in events:
        url = event.get("url") or None
        name = event.get("name") if event["type"] == "custom" else None
        if name in (eventnames.VITALS, eventnames.PAGELEAVE):
            _page_note(groups, url, name, event.get("props") or {})
            continue
        event["since_start"] = event["ts"] - first if first else None
        event["since_previous"] = event["ts"] - previous if previous else None
        previous = event["ts"]
        if name == eventnames.IDENTIFY:
            event["identified"] = _identified(event)
        new_page = url is not None and (
            event["type"] == "pageview" or not groups or groups[-1]["url"] != url
        )
        if new_page or not groups:
            title = event.get("title") if url else None
            groups.append({"url": url, "title": title, "events": []})
        groups[-1]["events"].append(event)
    return groups


def _page_note(groups: list[dict[str, Any]], url: str | None, name: str, props: Any) -> None:
    """Put a page's vitals or scroll depth on its group (the newest view of that URL)."""
    group = next((g for g in reversed(groups) if g["url"] == url), None)
    if group is None or not isinstance(props, dict):
        return
    if name == eventnames.PAGELEAVE:
        scroll = props.get("scroll")
        if isinstance(scroll, int | float) and not isinstance(scroll, bool):
            group["scroll"] = max(0, min(100, round(scroll)))
        return
    speeds = []
    for metric in vitals.METRICS:
        value = props.get(metric.name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            speeds.append(f"{metric.name.upper()} {value_text(metric.unit, value)}")
    if speeds:
        group["vitals"], group["path"] = " · ".join(speeds), page_path(url)


def _identified(event: dict[str, Any]) -> str:
    """Who an `$identify` says the visitor is: the user key (their user id once
    identified), with the name and email traits if sent."""
    props = event.get("props")
    traits: dict[str, Any] = props if isinstance(props, dict) else {}
    who = [str(traits[k]) for k in ("name", "email") if isinstance(traits.get(k), str)]
    user = str(event.get("user_id") or event.get("user_key") or "")
    return " · ".join(part for part in (user, *who) if part)


@site_page()
@xframe_options_sameorigin
def session_player(request: HttpRequest, site: Site, session_id: uuid.UUID) -> HttpResponse:
    """The replay player alone, framed by the session's timeline page (player.py): its
    own policy allows the inline styles the recorded page needs, in this document only."""
    found = timeline.session_timeline(site_id=site.id, session_id=session_id)
    events = found.decoded()[1] if found is not None else []
    try:
        seek = seek_param(request.GET.get("t"))
    except RangeError:
        seek = None  # the timeline page says so
    if not events:
        raise Http404("no such session")
    # No recording (yet): the player says so (the replay API answers no events).
    replay = player_island(site, session_id, events, seek=seek)
    response = render(request, "sessions_app/session_player.html", {"replay": replay})
    response["Content-Security-Policy"] = player_policy(site)
    return response


def _highlight(
    site: Site, funnel_id: str | None, chain: str | None, events: list[dict[str, Any]]
) -> Any:
    """With ?funnel=<id> (a funnel of this site): the events of the unit's chain
    (?chain=<the steps' times in ms>, from the drill-down: the event at that time that
    matches that step) as its steps, any other event matching a step marked lighter."""
    if not funnel_id:
        return None
    funnel = defs.funnel_of(site, funnel_id)
    if funnel.current is None:
        return None
    compiled = funnel_compile(funnel.current.definition)
    times = [t for t in (chain or "").split(",")[:10] if t.isdigit()]
    steps = {(int(t), n) for n, t in enumerate(times, start=1)}
    for event in events:
        mask = compiled.mask(event)
        event["funnel_steps"] = [i + 1 for i in range(len(compiled.matchers)) if mask >> i & 1]
        ts = timebuckets.epoch_ms(event["ts"])
        event["chain_step"] = next((n for n in event["funnel_steps"] if (ts, n) in steps), None)
    return funnel
