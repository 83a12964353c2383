"""Analyst pages: login and site access, every page renders, hostile payloads stay inert."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.foundation.tables import user_sessions
from tests.support.accounts import member
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

HOSTILE = {
    "title": '<img src=x onerror="alert(1)">',
    "element": {
        "tag": "a",
        "text": "<script>alert('text')</script>",
        "href": "java\tscript:alert('href')",
        "selector": 'a[onclick="x()"]',
    },
    "props": {"<b>key</b>": "<script>alert('props')</script>"},
}


@pytest.fixture
def visit(site):
    now = timezone.now().replace(microsecond=0)
    events_record(
        source=Source(site=site, received_at=now),
        raw_events=[
            event(now - timedelta(minutes=9), anon="evil", **{"title": HOSTILE["title"]}),
            event(
                now - timedelta(minutes=8), kind="click", anon="evil", element=HOSTILE["element"]
            ),
            event(
                now - timedelta(minutes=7),
                kind="custom",
                name="x",
                anon="evil",
                props=HOSTILE["props"],
            ),
            event(
                now - timedelta(minutes=6),
                kind="click",
                anon="evil",
                element={"tag": "a", "text": "safe", "href": "https://docs.example/ok"},
            ),
            event(  # urlsplit raises on it: shown as text, never a 500
                now - timedelta(minutes=5),
                kind="click",
                anon="evil",
                element={"tag": "a", "text": "ipv6", "href": "http://[evil/"},
            ),
        ],
    )
    [summary] = user_sessions.session_list(site_id=site.id, user_key="evil")
    return summary


def _pages(site, visit):
    return [
        "/",
        f"/sites/{site.id}/",
        f"/sites/{site.id}/site",
        f"/sites/{site.id}/users/?q=evil",
        f"/sites/{site.id}/users/evil/",
        f"/sites/{site.id}/users/evil/activity",
        f"/sites/{site.id}/sessions/{visit['session_id']}/",
    ]


def test_pages_require_login(client, site, visit):
    for url in _pages(site, visit):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/")


def test_pages_of_a_site_are_404_to_users_who_are_not_its_members(client, site, visit):
    client.force_login(User.objects.create_user("nobody", password="pw-nobody-1"))
    home, *site_pages = _pages(site, visit)
    assert site.name not in client.get(home).content.decode()
    for url in site_pages:
        assert client.get(url).status_code == 404, url


def test_analyst_sees_every_page(client, analyst, site, visit):
    member(analyst, site, "admin")  # the site's settings page is for its admins
    for url in _pages(site, visit):
        response = client.get(url, follow=True)
        assert response.status_code == 200, url
        assert "script-src 'self'" in response["Content-Security-Policy"]


def test_hostile_payloads_are_rendered_inert(client, analyst, site, visit):
    html = client.get(f"/sites/{site.id}/sessions/{visit['session_id']}/").content.decode()
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert "&lt;script&gt;alert(&#x27;text&#x27;)&lt;/script&gt;" in html
    hrefs = re.findall(r'href="([^"]*)"', html)
    assert not any("script:" in h.lower().replace("\t", "") for h in hrefs)
    assert "https://docs.example/ok" in hrefs  # an http(s) link stays a link
    assert "→ http://[evil/" in html  # an unparseable one is text
    assert "onerror=" not in html.replace("onerror=&quot;", "")
    assert not re.search(r"<script(?![^>]*src=)", html)  # no inline script at all


def test_timeline_shows_times_since_start_and_previous(client, analyst, site, visit):
    html = client.get(f"/sites/{site.id}/sessions/{visit['session_id']}/").content.decode()
    assert "+0.0s" in html and "+1m 00s" in html and "Δ 1m 00s" in html
    assert "Duration" in html and "3m 00s" in html


def test_user_search_finds_by_anonymous_id_and_reports_misses(client, analyst, site, visit):
    found = client.get(f"/sites/{site.id}/users/", {"q": "evil"})
    assert found.status_code == 302 and found["Location"].endswith("/users/evil/")
    missing = client.get(f"/sites/{site.id}/users/", {"q": "ghost"})
    shown = missing.content.decode()
    assert "No user id, anonymous id or email starts with <code>ghost</code>" in shown


def test_dashboard_range_cap_is_explained(client, analyst, site):
    html = client.get(
        f"/sites/{site.id}/", {"start": "2023-01-01T00:00", "end": "2026-02-10T00:00"}
    ).content.decode()
    assert "end: at most 731 days; narrow the range; showing last 7 days instead" in html
    forty = client.get(  # past the old 92-day cap: now by month, no error
        f"/sites/{site.id}/", {"start": "2025-11-01T00:00", "end": "2026-02-10T00:00"}
    )
    assert forty.context["chart"]["grain"] == "month" and not forty.context["error"]


@pytest.mark.parametrize(
    "endpoint",
    ["https://evil.example/collect", "http://[evil.example/collect", "http://127.0.0.1:x/"],
)
def test_demo_page_ignores_a_non_loopback_endpoint(client, site, endpoint, settings):
    settings.DEBUG = True  # /demo/?site=KEY in development only
    html = client.get("/demo/", {"site": site.key, "endpoint": endpoint})
    assert html.status_code == 200
    assert "evil.example" not in html.content.decode()
    assert "evil.example" not in html["Content-Security-Policy"]
    assert 'data-endpoint="http://testserver/collect"' in html.content.decode()


JUNK = {
    "start": ["x", "9999-12-31T23:59", "0001-01-01T00:00+01:00", "2026-13-40T00:00", "\x00"],
    "end": ["x", "9999-12-31T23:59", "0001-01-01T00:00", "9999-12-31T23:59-05:00"],
    "width": ["x", "month"],
    "cursor": ["x", "00000000-0000-0000-0000-000000000000", "6ba7b810-9dad-41d1-80b4-00c04fd430c8"],
    "strategy": ["x", "in", "\x00"],
    "counter": ["x" * 500, "\x00"],
    "q": ["\x00", "x" * 5000, "%"],
}


@pytest.mark.heavy
def test_junk_query_parameters_never_fail_a_page(client, analyst, site, visit):
    member(analyst, site, "admin")
    for url in _pages(site, visit):
        for name, values in JUNK.items():
            for value in values:
                response = client.get(url, {name: value}, follow=True)
                assert response.status_code in (200, 400, 404), (url, name, value)


@pytest.mark.parametrize("page", ["dashboard", "activity"])
def test_a_bad_time_is_named_and_the_default_shown(client, analyst, site, visit, page):
    url = f"/sites/{site.id}/" if page == "dashboard" else f"/sites/{site.id}/users/evil/activity"
    html = client.get(url, {"start": "last tuesday", "end": "9999-01-01T00:00"}).content.decode()
    if page == "dashboard":  # the range of every page (periods.py): the first bad field
        assert "end: between 1970-01-01 and a year from now; showing last 7 days" in html
        html = client.get(url, {"start": "last tuesday"}).content.decode()
        assert "start: not an ISO-8601 time: &#x27;last tuesday&#x27;; showing last 7" in html
    else:
        assert "start: not a date and time (YYYY-MM-DDTHH:MM, UTC); showing the default" in html
        assert "end: between 1970 and a year from now; showing the default" in html
    assert client.get(url).content.decode().count('class="error"') == 0


def _timeline_groups(html: str) -> list[str]:
    """The timeline's page groups (one tbody each), as HTML fragments."""
    table = html.split('<table class="timeline">', 1)[1].split("</table>", 1)[0]
    return [part.split("</tbody>", 1)[0] for part in table.split('<tbody class="page">')[1:]]


def test_timeline_puts_url_less_events_under_the_current_page(client, analyst, site):
    now = timezone.now().replace(microsecond=0)
    shop = "https://shop.example"

    def seg(minutes_ago: int, **fields):
        return event(now - timedelta(minutes=minutes_ago), anon="seg", **fields)

    events_record(
        source=Source(site=site, received_at=now),
        raw_events=[  # a server-side SDK sends identify and track without a page URL
            seg(9, kind="custom", name="$identify", url=None),
            seg(8, url=f"{shop}/pricing", title="Pricing"),
            seg(7, kind="custom", name="plan_viewed", url=None),
            seg(6, kind="click", url=f"{shop}/pricing"),
            seg(5, url=f"{shop}/signup", title="Sign up"),
            seg(4, kind="custom", name="signup", url=None),
        ],
    )
    [summary] = user_sessions.session_list(site_id=site.id, user_key="seg")
    html = client.get(f"/sites/{site.id}/sessions/{summary['session_id']}/").content.decode()

    groups = _timeline_groups(html)
    assert len(groups) == 3, groups
    before, pricing, signup = groups
    assert "(before the first page)" in before and "identified as <strong>seg" in before
    assert before.count('<tr class="event') == 1
    assert f'href="{shop}/pricing"' in pricing and "Pricing" in pricing
    assert "plan_viewed" in pricing and pricing.count('<tr class="event') == 3
    assert f'href="{shop}/signup"' in signup and "<strong>signup</strong>" in signup
    assert signup.count('<tr class="event') == 2
    assert "(no page)" not in html
    assert html.count("<table") == 1  # one table: the groups share its columns
