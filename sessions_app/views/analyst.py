"""Analyst pages: dashboard, user search and profile, session timeline, activity, site."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.clickjacking import xframe_options_sameorigin

from sessions_app.domain.aggregates import breakdowns, rolling
from sessions_app.domain.aggregates.kpis import kpi_cards, metric_param
from sessions_app.domain.aggregates.report import MAX_LIVE_HOURS
from sessions_app.domain.ingest import realtime
from sessions_app.domain.permissions import site_page
from sessions_app.domain.sessions import directory, lists, timeline
from sessions_app.domain.sessions.activity import user_activity
from sessions_app.domain.sessions.directory import MAX_QUERY
from sessions_app.features.analysis import dashboard as dashboard_filters
from sessions_app.features.analysis import goal_table
from sessions_app.features.analysis.kpi_report import (
    PeriodReport,
    chart_data,
    period_report,
    site_period,
)
from sessions_app.features.cohorts import reads as cohort_reads
from sessions_app.features.funnels import defs
from sessions_app.features.funnels.spec import funnel_compile
from sessions_app.features.replays.player import (
    player_data,
    player_island,
    player_policy,
    replays_mark,
    seek_param,
)
from sessions_app.features.web import periods
from sessions_app.features.web.params import iso, page_cursor, page_range, query_params
from sessions_app.foundation import dimensions
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Site

ACTIVITY_DAYS = 92  # the user's buckets one page of activity may read (MAX_RANGE_BUCKETS)


BAR_X, BAR_W, ROW_H = 130, 160, 16  # the breakdown SVG: labels left of x=130, bars 160 wide


def _breakdown_charts(rows: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """A horizontal bar chart of sessions per value for each dimension, with its axis."""
    charts = []
    for name, values in rows.items():
        peak = max((r["sessions"] for r in values), default=0) or 1
        height = 16 + ROW_H * len(values)
        bars = [
            {
                **r,
                "y": 16 + i * ROW_H,
                "text_y": 16 + i * ROW_H + 11,
                "w": round(r["sessions"] / peak * BAR_W, 2),
                "rate": f"{r['conversion_rate']:.1%}",
            }
            for i, r in enumerate(values)
        ]
        ticks = [
            {"x": BAR_X + round(BAR_W * f, 2), "label": round(peak * f) if peak > 1 else f}
            for f in (0, 0.5, 1)
        ]
        charts.append(
            {
                "name": name,
                "title": dimensions.named(name).title,
                "bars": bars,
                "ticks": ticks,
                "height": height,
                "bar_x": BAR_X,
            }
        )
    return charts


@site_page()
def dashboard(request: HttpRequest, site: Site) -> HttpResponse:
    now = datetime.now(UTC)
    errors: list[str] = []
    try:
        period, zone_note = site_period(request.GET, site=site, now=now)
    except RangeError as exc:
        period, zone_note = site_period({}, site=site, now=now)
        errors.append(f"{exc}; showing {period.label.lower()} instead")
    metric = metric_param(request.GET.get("metric"))
    shown = dashboard_filters.dashboard_context(
        site=site, period=period, params=query_params(request)
    )
    context: dict[str, Any] = {
        "site": site,
        "period": period,
        "zone_note": zone_note,
        "metric": metric,
        "live_cap": MAX_LIVE_HOURS,
        "latest_zone": period.zone.key,
        **shown,
    }
    try:
        result = period_report(site=site, period=period)
    except RangeError as exc:
        errors.append(str(exc))
    else:
        context.update(_dashboard_numbers(request, result, metric, shown["filtered"]))
        context["goals"] = goal_table.dashboard_goals(
            site_id=site.id,
            period=period,
            params=query_params(request),
            answer=shown["filtered"] or result,
        )
    context["error"] = "; ".join(errors)
    context["now"] = realtime.realtime_now(site_id=site.id, now=now)
    return render(request, "sessions_app/dashboard.html", context)


def _dashboard_numbers(
    request: HttpRequest,
    result: PeriodReport,
    metric: str,
    filtered: dashboard_filters.FilteredAnswer | None,
) -> dict[str, Any]:
    """The dashboard's report, KPI cards (each a link that charts it), chart data; with
    filters, the filtered answer's KPIs, chart and breakdowns."""
    report = result.current
    width = report["width"]
    breakdown = breakdowns.breakdown_rows(report["breakdowns"], top=8)
    report["breakdown_charts"] = _breakdown_charts(filtered.breakdowns if filtered else breakdown)
    states = [r.state for r in report["buckets"]]
    report["sealed"], report["live"] = states.count("sealed"), states.count("live")
    cards = kpi_cards(filtered.kpis, filtered.previous) if filtered else result.cards()
    for card in cards:
        query = request.GET.copy()
        query["metric"] = card["key"]
        card["query"] = query.urlencode()
    before = result.period.comparison()
    return {
        "report": report,
        "width": width,
        "cards": cards,
        "comparison_label": before.label if before is not None else "",
        "chart": filtered.chart if filtered else chart_data(result, metric=metric),
    }


@site_page()
def user_search(request: HttpRequest, site: Site) -> HttpResponse:
    """Recent users (identified first), or the users a prefix of a user id, an anonymous
    id or an email finds; an exact key known only before the directory opens its profile."""
    query = (request.GET.get("q") or "").strip()[:MAX_QUERY]
    if not query:
        users = directory.recent_users(site_id=site.id)
    else:
        users = directory.directory_search(site_id=site.id, query=query)
        exact = len(users) == 1 and users[0]["user_key"] == query
        if exact or (not users and _known(site, query)):
            return redirect(reverse("sessions_app:user-profile", args=[site.id, query]))
    return render(
        request,
        "sessions_app/user_search.html",
        {"site": site, "query": query, "users": users, "zone": site.time_zone},
    )


def _known(site: Site, key: str) -> bool:
    page = lists.sessions_page(site_id=site.id, user_keys=[key], limit=1)
    return bool(page.sessions or lists.identity_links(site_id=site.id, user_id=key, limit=1))


@site_page()
def user_profile(request: HttpRequest, site: Site, user_key: str) -> HttpResponse:
    linked = lists.identity_links(site_id=site.id, user_id=user_key, limit=19)
    page = lists.sessions_page(
        site_id=site.id,
        user_keys=[user_key, *linked],
        limit=20,
        before=page_cursor(request.GET.get("cursor")),
    )
    choices = list(dict.fromkeys(settings.ROLLING_COUNTER_EVENTS))
    counter = request.GET.get("counter") or choices[0]
    if counter not in choices:
        choices.append(counter[:128])
        counter = counter[:128]
    counts = rolling.rolling_counts(
        site_id=site.id, user_key=user_key, event_key=counter, now=datetime.now(UTC)
    )
    properties = lists.user_properties(site_id=site.id, user_key=user_key)
    replays_mark(site, page.sessions)
    periods_active = cohort_reads.user_periods(site.id, user_key, now=datetime.now(UTC))
    return render(
        request,
        "sessions_app/user_profile.html",
        {
            "site": site,
            "user_key": user_key,
            "linked": linked,
            "properties": properties,
            "sessions": page.sessions,
            "next_cursor": page.next_cursor,
            "counter": counter,
            "counter_choices": choices,
            "counts": counts,
            "periods_active": periods_active,
        },
    )


def _pages(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Group consecutive events by page URL, with time since start and since previous.

    A page view, or a URL other than the current page's, starts a group. An event
    without a URL (a server-side track or identify) happened while the page before
    it was current, so it joins that group; only the URL-less events before the
    session's first URL form a group of their own (url None).
    """
    groups: list[dict[str, Any]] = []
    first = events[0]["ts"] if events else None
    previous = None
    for event in events:
        event["since_start"] = event["ts"] - first if first else None
        event["since_previous"] = event["ts"] - previous if previous else None
        previous = event["ts"]
        url = event.get("url") or None
        new_page = url is not None and (
            event["type"] == "pageview" or not groups or groups[-1]["url"] != url
        )
        if new_page or not groups:
            title = event.get("title") if url else None
            groups.append({"url": url, "title": title, "events": []})
        groups[-1]["events"].append(event)
    return groups


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


def _activity_range(
    params: dict[str, str], site: Site
) -> tuple[periods.Period, datetime, datetime, str, list[str]]:
    """The activity page's period (its last ACTIVITY_DAYS days at most), the note when it
    was cut and what was wrong: an old link's start/end read as they always were (a bad
    one: the default, said so), anything else as every page reads the period."""
    zone, now = periods.site_zone(site.time_zone), datetime.now(UTC)
    errors: list[str] = []
    if not params.get("period") and (params.get("start") or params.get("end")):
        start, end, errors = page_range(params, span=timedelta(days=7), now=now)
        params = {"start": iso(start), "end": iso(end)}
    try:
        period = periods.period_param(params, zone=zone, now=now)
    except RangeError as exc:
        errors.append(f"{exc}; showing the default")
        period = periods.period_param({}, zone=zone, now=now)
    if period.key == "custom" and period.first_day is None:  # exact: too long is an error
        return period, period.start, period.end, "", errors
    start, end, note = periods.capped(period, ACTIVITY_DAYS, "Activity covers")
    return period, start, end, note, errors


@site_page()
def activity(request: HttpRequest, site: Site, user_key: str) -> HttpResponse:
    """A user's events over the period (every page's range picker; its last 92 days at
    most); a bad parameter is named and the default period shown."""
    params = {k: str(v) for k, v in request.GET.items()}
    period, start, end, note, errors = _activity_range(params, site)
    strategy = request.GET.get("strategy") or None
    page = None
    try:
        page = user_activity(
            site_id=site.id,
            user_key=user_key,
            start=start,
            end=end,
            limit=50,
            cursor=page_cursor(request.GET.get("cursor")),
            strategy=strategy,
        )
    except RangeError as exc:
        errors.append(str(exc))
    return render(
        request,
        "sessions_app/activity.html",
        {
            "site": site,
            "user_key": user_key,
            "period": period,
            "range_note": note,
            "page": page,
            "error": "; ".join(errors),
            "strategy": strategy or "auto",
            "strategies": ["auto", "in", "parallel", "sequential"],
        },
    )
