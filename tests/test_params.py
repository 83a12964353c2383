"""Every page and API view reads its shared parameters through sessions_app/features/web/params.py
and answers a bad one as it always has: the status, and the reason naming the field (the API as
{"error", "field"}, a page in its error line). The API's user, session and export routes repeat the
field in "error" ("start: start: …"), as they always did; the report and the dashboard read the
periods' parameters (sessions_app/features/web/periods.py) and name it once."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import User

from sessions_app.features.funnels import defs
from tests.support.accounts import auth

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

RANGE = {"start": "2026-01-01T00:00:00Z", "end": "2026-01-01T01:00:00Z"}
DEFINITION = {"steps": [{"kind": "pageview", "path": "/a"}, {"kind": "event", "name": "buy"}]}
CASES = [
    (
        "/api/sites/{site}/report",
        {"start": "nope"},
        400,
        "start: not an ISO-8601 time: 'nope'",
    ),
    (
        # No zone is UTC (the pages' periods); hours from then to now are too many.
        "/api/sites/{site}/report",
        {"start": "2026-01-01T00:00:00"},
        400,
        "end: at most 744 hour buckets",
    ),
    (
        "/api/sites/{site}/report",
        {"end": "1960-01-01T00:00:00Z"},
        400,
        "end: between 1970-01-01 and a year from now",
    ),
    ("/api/sites/{site}/report", {"top": "0"}, 400, "top: top: between 1 and 50"),
    ("/api/sites/{site}/report", {"top": "x"}, 400, "top: top: not an integer"),
    (
        "/api/sites/{site}/users/u/activity",
        {"start": "2026-01-01T00:00:00+00:00", "end": "2026-06-01T00:00:00+00:00"},
        400,
        "end: range longer than 92 days; narrow it",
    ),
    (
        "/api/sites/{site}/users/u/activity",
        {"limit": "5000"},
        400,
        "limit: limit: between 1 and 1000",
    ),
    ("/api/sites/{site}/users/u/activity", {"limit": "many"}, 400, "limit: limit: not an integer"),
    (
        "/api/sites/{site}/users/u/activity",
        {"cursor": "not-a-uuid"},
        400,
        "cursor: cursor: not a UUID",
    ),
    (
        "/api/sites/{site}/users/u/activity",
        {"strategy": "magic"},
        400,
        "strategy: one of auto, in, parallel, sequential",
    ),
    ("/api/sites/{site}/users/u/sessions", {"limit": "0"}, 400, "limit: limit: between 1 and 1000"),
    ("/api/sites/{site}/users/u/sessions", {"cursor": "zzz"}, 400, "cursor: cursor: not a UUID"),
    (
        "/api/sites/{site}/users/u/counters",
        {},
        400,
        "event: event: an event name of 1-128 characters is required",
    ),
    (
        "/api/sites/{site}/users/u/counters",
        {"event": "x", "at": "later"},
        400,
        "at: at: not an ISO-8601 time: 'later'",
    ),
    (
        "/api/sites/{site}/users/u/activity/export",
        {"start": "bad"},
        400,
        "start: start: not an ISO-8601 time: 'bad'",
    ),
    (
        "/api/sites/{site}/users/u/activity/export",
        {"format": "xml"},
        400,
        "format: format: csv or json",
    ),
    ("/api/sites/{site}/sessions", {"start": "nope"}, 400, "start: not an ISO-8601 time: 'nope'"),
    (
        "/api/sites/{site}/sessions",
        {"start": "2026-01-01T00:00:00", "end": "2025-01-01T00:00:00"},
        400,
        "end: must be after start",
    ),
    ("/api/sites/{site}/sessions", {"limit": "201"}, 400, "limit: limit: between 1 and 200"),
    ("/api/sites/{site}/sessions", {"duration_min": "x"}, 400, "duration_min: not a whole number"),
    ("/api/sites/{site}/sessions", {"bot": "maybe"}, 400, "bot: true, false or any"),
    (
        "/api/sites/{site}/paths",
        {"start": "x" * 80},
        400,
        f"start: not an ISO-8601 time: {'x' * 40!r}",
    ),
    (
        "/api/sites/{site}/paths",
        {"from": "/a", "to": "/b"},
        400,
        "to: give either from or to, not both",
    ),
    (
        "/api/sites/{site}/paths",
        {"to": "/" + "a" * 600},
        400,
        "to: at most 512 characters",
    ),
    (
        "/api/sites/{site}/transitions",
        {},
        400,
        "page: required: the page path whose transitions to show",
    ),
    (
        "/api/sites/{site}/transitions",
        {"page": "/a", "end": "3000-01-01T00:00:00"},
        400,
        "end: between 1970-01-01 and a year from now",
    ),
    (
        "/api/sites/{site}/funnels/{funnel}/results",
        {"breakdown": "planet"},
        400,
        "breakdown: one of source, medium, campaign, country, device, browser",
    ),
    (
        "/api/sites/{site}/funnels/{funnel}/results",
        {"start": "yesterday"},
        400,
        "start: not an ISO-8601 time: 'yesterday'",
    ),
    ("/api/sites/{site}/funnels/{funnel}/units", {"step": "9"}, 400, "step: between 1 and 2"),
    ("/api/sites/{site}/funnels/{funnel}/units", {"step": "x"}, 400, "step: not a whole number"),
    (
        "/api/sites/{site}/funnels/{funnel}/units",
        {"cursor": "-1"},
        400,
        "cursor: not a cursor this API returned",
    ),
    (
        "/api/sites/{site}/funnels/{funnel}/units",
        {"limit": "500"},
        400,
        "limit: limit: between 1 and 200",
    ),
    (
        "/api/sites/{site}/funnels/{funnel}/units",
        {**RANGE, "outcome": "won"},
        400,
        "outcome: reached or dropped",
    ),
    (
        # The dashboard reads the periods' parameters: a bad one names itself, and the
        # page shows the default period instead.
        "/sites/{site}/",
        {"start": "nope"},
        200,
        "start: not an ISO-8601 time: 'nope'; showing last 7 days instead",
    ),
    (
        "/sites/{site}/",
        {"start": "1900-01-01T00:00", "end": "nope"},
        200,
        "end: not an ISO-8601 time: 'nope'; showing last 7 days instead",
    ),
    (
        "/sites/{site}/users/u/activity",
        {"start": "nope"},
        200,
        "start: not a date and time (YYYY-MM-DDTHH:MM, UTC); showing the default",
    ),
    (
        "/sites/{site}/users/u/activity",
        {"start": "2026-01-01T00:00", "end": "2026-06-01T00:00"},
        200,
        "end: range longer than 92 days; narrow it",
    ),
    ("/sites/{site}/sessions/", {"start": "nope"}, 400, "start: not an ISO-8601 time: 'nope'"),
    (
        "/sites/{site}/sessions/",
        {"events_min": "5", "events_max": "2"},
        400,
        "events_max: must not be below events_min",
    ),
    (
        "/sites/{site}/paths/",
        {"from": "/a", "to": "/b"},
        400,
        "to: give either from or to, not both",
    ),
    ("/sites/{site}/paths/", {"end": "bad"}, 400, "end: not an ISO-8601 time: 'bad'"),
    ("/sites/{site}/transitions/", {}, 200, None),
    (
        "/sites/{site}/transitions/",
        {"page": "/a", "start": "bad"},
        400,
        "start: not an ISO-8601 time: 'bad'",
    ),
    (
        "/sites/{site}/heatmaps/",
        {"page": "x"},
        400,
        "page: a path starting with / of at most 2048 characters",
    ),
    (
        "/sites/{site}/heatmaps/",
        {"page": "/a", "vp": "huge"},
        400,
        "vp: one of <640, 640-1024, >1024",
    ),
    ("/sites/{site}/heatmaps/", {"page": "/a", "days": "x"}, 400, "days: one of 7, 30, 90"),
    (
        "/sites/{site}/funnels/{funnel}/",
        {"breakdown": "planet"},
        400,
        "breakdown: one of source, medium, campaign, country, device, browser",
    ),
    (
        "/sites/{site}/funnels/{funnel}/",
        {"start": "bad"},
        400,
        "start: not an ISO-8601 time: 'bad'",
    ),
    ("/sites/{site}/funnels/{funnel}/units/", {"step": "0"}, 400, "step: between 1 and 2"),
    (
        "/sites/{site}/funnels/{funnel}/units/",
        {**RANGE, "outcome": "won"},
        400,
        "outcome: reached or dropped",
    ),
]


def _error(response) -> str | None:
    if response["Content-Type"].startswith("application/json"):
        body = response.json()
        assert body["error"].startswith(f"{body['field']}: ")
        return body["error"]
    found = re.findall(r'class="error"[^>]*>(.*?)</', response.content.decode(), re.S)
    return html.unescape(found[0]) if found else None


def test_every_view_answers_a_bad_parameter_naming_it_as_before(client, site, token):
    funnel = defs.funnel_create(site=site, name="f", definition=DEFINITION)
    client.force_login(User.objects.get(username="api-user"))  # the token's analyst
    for url, params, status, error in CASES:
        path = url.format(site=site.id, funnel=funnel.pk)
        headers = auth(token) if path.startswith("/api/") else {}
        response = client.get(path, params, **headers)
        assert (response.status_code, _error(response)) == (status, error), (url, params)
