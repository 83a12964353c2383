"""Saved segments (features/segments): saved from a page's filters, applied from the
picker on the dashboard and the sessions list, personal or shared by the site's admins,
changed and deleted by whoever may, listed and saved through the API; a segment whose
goal was deleted says so; bad input is named."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessions_app.domain.jobs.goal_backfill import goal_save
from sessions_app.foundation.models import Goal, Segment
from tests.support.accounts import auth, member
from tests.support.events import event, post
from tests.support.hypothesis import examples

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

SHOP = "https://shop.example"


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _picker(page: str) -> str:
    return page.split('id="segment-picker"', 1)[1].split("</details>", 1)[0]


def _links(page: str) -> dict[str, dict[str, list[str]]]:
    """The picker's segments as {name: the query its link opens}."""
    found = re.findall(r'class="segment-link" href="([^"]*)"[^>]*>([^<]*)</a>', _picker(page))
    return {name: parse_qs(urlsplit(html.unescape(href)).query) for href, name in found}


def test_save_the_dashboards_filters_then_apply_them_on_both_pages(client, site, analyst):
    now = timezone.now()
    post(client, site, [event(now - timedelta(minutes=5), anon="seg-1", url=SHOP + "/a")])
    dashboard = f"/sites/{site.id}/"
    page = client.get(dashboard, {"period": "30d", "country": "DE", "device": "desktop"})
    form = _picker(page.content.decode())
    assert 'name="country" value="DE"' in form and 'name="device" value="desktop"' in form
    saved = client.post(
        f"/sites/{site.id}/segments/",
        {"name": "  German   desktops ", "country": "DE", "device": "desktop", "period": "30d"}
        | {"next": dashboard},
    )
    assert saved.status_code == 302
    back = urlsplit(saved["Location"])
    assert back.path == dashboard
    assert parse_qs(back.query) == {"country": ["DE"], "device": ["desktop"], "period": ["30d"]}
    segment = Segment.objects.get(site=site)
    assert (segment.name, segment.filters, segment.shared) == (
        "German desktops",
        {"country": "DE", "device": "desktop"},
        False,
    )
    applied = client.get(saved["Location"]).content.decode()
    assert "Segments: <strong>German desktops</strong>" in applied
    # On the sessions list, the link keeps that page's range and adds the filters.
    sessions = client.get(f"/sites/{site.id}/sessions/", {"period": "7d"}).content.decode()
    assert _links(sessions) == {
        "German desktops": {"period": ["7d"], "country": ["DE"], "device": ["desktop"]}
    }
    page = client.get(f"/sites/{site.id}/segments/").content.decode()
    assert "Country is DE, Device is desktop" in page  # as the chips say them
    listed = client.get(f"/api/sites/{site.id}/segments").json()["segments"]
    assert [(s["name"], s["query"], s["problem"]) for s in listed] == [
        ("German desktops", "country=DE&device=desktop", None)
    ]


def test_a_personal_segment_is_its_owners_a_shared_one_every_members(client, site, analyst):
    colleague = member(User.objects.create_user("col", password="pw-col-123"), site)
    admin = member(User.objects.create_user("adm", password="pw-adm-123"), site, "admin")
    segments = f"/sites/{site.id}/segments/"
    client.post(segments, {"name": "Mine", "country": "FR"})
    refused = client.post(segments, {"name": "Everyone's", "country": "FR", "shared": "on"})
    why = html.unescape(refused.content.decode())
    assert refused.status_code == 400 and "shared: only the site's admins share segments" in why
    _client(admin).post(segments, {"name": "Team", "browser": "Firefox", "shared": "on"})
    mine, team = Segment.objects.get(name="Mine"), Segment.objects.get(name="Team")
    assert team.shared and not mine.shared
    theirs = _client(colleague)
    assert set(_links(theirs.get(f"/sites/{site.id}/").content.decode())) == {"Team"}
    assert set(_links(client.get(f"/sites/{site.id}/").content.decode())) == {"Mine", "Team"}
    assert theirs.get(f"{segments}{mine.pk}/").status_code == 404  # not theirs to see
    assert theirs.post(f"{segments}{mine.pk}/delete").status_code == 404
    assert theirs.post(f"{segments}{team.pk}/", {"name": "Renamed"}).status_code == 404
    assert theirs.post(f"{segments}{team.pk}/delete").status_code == 404
    assert Segment.objects.filter(pk__in=[mine.pk, team.pk]).count() == 2
    # The owner renames theirs; an admin stops sharing the team's; the owner deletes theirs.
    assert client.post(f"{segments}{mine.pk}/", {"name": "Mine, French"}).status_code == 302
    assert _client(admin).post(f"{segments}{team.pk}/", {"name": "Team"}).status_code == 302
    team.refresh_from_db()
    assert not team.shared and "Team" not in _links(
        client.get(f"/sites/{site.id}/").content.decode()
    )
    assert client.post(f"{segments}{mine.pk}/delete").status_code == 302
    assert not Segment.objects.filter(pk=mine.pk).exists()


@pytest.mark.parametrize(
    ("posted", "field"),
    [
        ({"name": "No filters"}, "filters"),
        ({"name": "", "country": "DE"}, "name"),
        ({"name": "x" * 101, "country": "DE"}, "name"),
        ({"name": "Long", "duration_min": "soon"}, "duration_min"),
        ({"name": "Bot", "bot": "perhaps"}, "bot"),
        ({"name": "Goal", "goal": "-3"}, "goal"),
    ],
)
def test_bad_input_is_named_and_saves_nothing(client, site, analyst, posted, field):
    page = client.post(f"/sites/{site.id}/segments/", posted)
    assert page.status_code == 400 and f"{field}: " in html.unescape(page.content.decode())
    api = client.post(
        f"/api/sites/{site.id}/segments",
        {"name": posted["name"], "filters": {k: v for k, v in posted.items() if k != "name"}},
        content_type="application/json",
    )
    assert api.status_code == 400 and api.json()["field"] == field, api.content
    assert not Segment.objects.exists()


def test_a_segment_whose_goal_was_deleted_says_so_everywhere(client, site, analyst):
    goal = goal_save(
        site=site, name="Buy", definition={"kind": "pageview", "path": "/buy"}, now=timezone.now()
    )
    client.post(f"/sites/{site.id}/segments/", {"name": "Buyers", "goal": str(goal.pk)})
    Goal.objects.filter(pk=goal.pk).delete()
    listed = client.get(f"/sites/{site.id}/segments/").content.decode()
    assert "cannot be applied: its goal was deleted" in listed
    dashboard = client.get(f"/sites/{site.id}/")
    assert dashboard.status_code == 200
    picker = _picker(dashboard.content.decode())
    assert "Buyers" in picker and "cannot be applied: its goal was deleted" in picker
    assert _links(dashboard.content.decode()) == {}  # not offered as a link
    [api] = client.get(f"/api/sites/{site.id}/segments").json()["segments"]
    assert api["problem"] == "its goal was deleted"


def test_the_api_saves_and_lists_with_a_token(site, token):
    saved = Client().post(
        f"/api/sites/{site.id}/segments",
        {"name": "Search", "filters": {"medium": "search"}},
        content_type="application/json",
        **auth(token),
    )
    assert saved.status_code == 201 and saved.json()["query"] == "medium=search"
    listed = Client().get(f"/api/sites/{site.id}/segments", **auth(token)).json()
    assert [s["name"] for s in listed["segments"]] == ["Search"]


filter_values = st.text(max_size=30) | st.integers(-5, 10**6).map(str)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    name=st.text(max_size=120),
    filters=st.dictionaries(
        st.sampled_from(["country", "device", "bot", "goal", "replay", "duration_min", "x"]),
        filter_values | st.none() | st.booleans() | st.lists(st.integers(), max_size=2),
        max_size=4,
    ),
)
def test_any_body_gets_a_segment_or_a_named_reason(client, site, analyst, name: str, filters: Any):
    response = client.post(
        f"/api/sites/{site.id}/segments",
        {"name": name, "filters": filters},
        content_type="application/json",
    )
    assert response.status_code in (201, 400), response.content
    if response.status_code == 400:
        assert response.json()["field"] and response.json()["error"]
    else:
        assert client.get(f"/sites/{site.id}/").status_code == 200  # the picker lists it


def test_the_api_applies_a_segment_by_its_id_on_any_route_of_its_site(client, site, analyst):
    now = timezone.now()
    for anon, path in (("api-seg-1", "/a"), ("api-seg-2", "/b"), ("api-seg-3", "/a")):
        post(client, site, [event(now - timedelta(minutes=5), anon=anon, url=SHOP + path)])
    mine = Segment.objects.create(site=site, name="A", filters={"entry": "/a"}, owner=analyst)
    report = f"/api/sites/{site.id}/report"
    by_id = client.get(report, {"period": "24h", "segment": mine.pk})
    by_filters = client.get(report, {"period": "24h", "entry": "/a"})
    assert by_id.status_code == 200, by_id.content
    assert by_id.json()["filters"] == by_filters.json()["filters"] == {"entry": "/a"}
    assert by_id.json()["kpis"] == by_filters.json()["kpis"]
    assert by_id.json()["kpis"]["visits"] == 2  # the two sessions that entered on /a
    sessions = client.get(f"/api/sites/{site.id}/sessions", {"period": "24h", "segment": mine.pk})
    assert sorted(s["user_key"] for s in sessions.json()["sessions"]) == ["api-seg-1", "api-seg-3"]
    # Someone else's unshared segment, an id of another site, a clash with the URL: 400.
    other = User.objects.create_user("seg-other")
    theirs = Segment.objects.create(site=site, name="T", filters={"entry": "/b"}, owner=other)
    for asked in ({"segment": theirs.pk}, {"segment": "x"}, {"segment": mine.pk, "entry": "/b"}):
        refused = client.get(report, {"period": "24h", **asked})
        assert refused.status_code == 400, asked
        assert refused.json()["field"] == "segment"


def test_a_segments_filters_are_replaced_by_the_pages_from_the_picker(client, site, analyst):
    mine = Segment.objects.create(site=site, name="Mine", filters={"country": "DE"}, owner=analyst)
    other = User.objects.create_user("seg-owner-2")
    shared = Segment.objects.create(
        site=site, name="Theirs", filters={"country": "FR"}, owner=other, shared=True
    )
    page = client.get(f"/sites/{site.id}/", {"period": "7d", "device": "mobile"}).content.decode()
    replace = page.split('class="segment-save segment-replace"', 1)[1].split("</form>", 1)[0]
    assert f'<option value="{mine.pk}">Mine</option>' in replace
    assert f'value="{shared.pk}"' not in replace  # an analyst does not change a shared one
    done = client.post(
        f"/sites/{site.id}/segments/",
        {"replace": str(mine.pk), "device": "mobile", "period": "7d", "next": f"/sites/{site.id}/"},
    )
    assert done.status_code == 302
    assert parse_qs(urlsplit(done["Location"]).query) == {"device": ["mobile"], "period": ["7d"]}
    mine.refresh_from_db()
    assert mine.filters == {"device": "mobile"}
    for bad in ({"replace": str(shared.pk), "device": "mobile"}, {"replace": str(mine.pk)}):
        refused = client.post(f"/sites/{site.id}/segments/", bad)
        assert refused.status_code == 400, bad
    shared.refresh_from_db()
    assert shared.filters == {"country": "FR"}


def test_the_performance_page_applies_the_segments_it_can(client, site, analyst):
    usable = Segment.objects.create(
        site=site,
        name="German desktops",
        filters={"country": "DE", "device": "desktop"},
        owner=analyst,
    )
    other = Segment.objects.create(
        site=site, name="From news", filters={"source": "news"}, owner=analyst
    )
    page = client.get(f"/sites/{site.id}/performance/", {"period": "7d"}).content.decode()
    assert _links(page) == {
        "German desktops": {"period": ["7d"], "country": ["DE"], "device": ["desktop"]}
    }
    picker = _picker(page)
    assert "From news" in picker and "this page does not filter by source" in picker
    applied = client.get(f"/sites/{site.id}/performance/", {"country": "DE", "device": "desktop"})
    assert applied.context["filters"] == {"device": "desktop", "country": "DE"}
    assert "Segments: <strong>German desktops</strong>" in applied.content.decode()
    assert other.pk and usable.pk
