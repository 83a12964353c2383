"""The users pages: search, a user's profile and their activity."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from sessions_app.domain.aggregates import rolling
from sessions_app.domain.permissions import site_page
from sessions_app.domain.sessions import directory, lists
from sessions_app.domain.sessions.activity import user_activity
from sessions_app.domain.sessions.directory import MAX_QUERY
from sessions_app.features.cohorts import reads as cohort_reads
from sessions_app.features.replays.player import (
    replays_mark,
)
from sessions_app.features.web import periods
from sessions_app.features.web.params import iso, page_cursor, page_range
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Site

ACTIVITY_DAYS = 92  # the user's buckets one page of activity may read (MAX_RANGE_BUCKETS)


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
