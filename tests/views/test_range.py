"""One range picker on every site page (templates/sessions_app/_range.html) and a nav that
carries the period and the filters (templatetags/clickstream.py: range_state, nav_query).
The browser side (presets, custom days, compare, the nav followed): tests/e2e/test_range.py."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

PAGES = ("dashboard", "sessions", "funnels", "paths", "heatmaps")


def _nav(html: str) -> dict[str, dict[str, list[str]]]:
    """Each site nav link's query, by its text."""
    nav = html[html.index('<nav class="main-nav"') : html.index("</nav>")]
    links = re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', nav)
    return {text: parse_qs(urlsplit(unescape(href)).query) for href, text in links}


def _picker(html: str) -> str:
    return html[html.index('<form method="get" class="range-picker"') :].split("</form>")[0]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_shows_the_picker_and_its_nav_carries_the_range_and_filters(
    client, analyst, site, page
):
    query = {"period": "30d", "compare": "year", "country": "DE", "cursor": "x", "bogus": "1"}
    html = client.get(reverse(f"sessions_app:{page}", args=[site.id]), query).content.decode()
    picker = _picker(html)
    assert '<option value="30d" selected>Last 30 days</option>' in picker
    if page == "dashboard":  # the comparison only where it changes the numbers
        assert '<option value="year" selected>Year before</option>' in picker
    else:
        assert 'id="range-compare"' not in picker and "compared with" not in picker
        assert '<input type="hidden" name="compare" value="year">' in picker  # kept
    assert '<input type="hidden" name="country" value="DE">' in picker  # the filter stays
    assert 'name="cursor"' not in picker and 'name="bogus"' not in picker
    # the days typed as the app writes them, not in the browser's locale (mm/dd/yyyy)
    assert 'type="text" name="from"' in picker and 'type="text" name="to"' in picker
    assert picker.count('placeholder="YYYY-MM-DD"') == 2
    assert "Last 30 days" in picker and "UTC" in picker
    nav = _nav(html)
    for text in ("Dashboard", "Sessions", "Funnels", "Paths", "Heatmaps", "Users"):
        assert nav[text] == {"period": ["30d"], "compare": ["year"], "country": ["DE"]}, text


def test_the_previous_period_is_compared_unless_turned_off_and_off_stays_off(client, analyst, site):
    """Comparison is on by default (the previous period); "No comparison" is a choice the
    nav carries from page to page."""
    url = reverse("sessions_app:dashboard", args=[site.id])
    html = client.get(url).content.decode()
    assert '<option value="previous" selected>Previous period</option>' in _picker(html)
    assert "compared with" in _picker(html)
    assert "compare" not in _nav(html)["Sessions"]  # the default needs no parameter
    html = client.get(url, {"compare": "off"}).content.decode()
    assert '<option value="off" selected>No comparison</option>' in _picker(html)
    assert "compared with" not in _picker(html)
    for text in ("Dashboard", "Sessions", "Funnels", "Paths"):
        assert _nav(html)[text] == {"period": ["7d"], "compare": ["off"]}, text


def test_custom_days_travel_and_the_zone_is_the_sites(client, analyst, site):
    site.time_zone = "Europe/Berlin"
    site.save()
    query = {"period": "custom", "from": "2026-10-01", "to": "2026-10-31", "device": "mobile"}
    html = client.get(reverse("sessions_app:sessions", args=[site.id]), query).content.decode()
    picker = _picker(html)
    assert 'value="2026-10-01"' in picker and 'value="2026-10-31"' in picker
    assert "1 Oct \u2013 31 Oct 2026" in picker and "Europe/Berlin" in picker
    assert _nav(html)["Paths"] == {
        "period": ["custom"],
        "from": ["2026-10-01"],
        "to": ["2026-10-31"],
        "device": ["mobile"],
    }


def test_the_default_period_adds_nothing_to_the_nav(client, analyst, site):
    html = client.get(reverse("sessions_app:funnels", args=[site.id])).content.decode()
    assert all(q == {} for q in _nav(html).values())
    assert '<option value="7d" selected>Last 7 days</option>' in _picker(html)


def test_a_bad_period_is_named_on_the_page(client, analyst, site):
    response = client.get(reverse("sessions_app:sessions", args=[site.id]), {"period": "fortnight"})
    assert response.status_code == 400
    assert "period: one of today" in response.content.decode()


def test_old_start_end_links_keep_working_and_travel(client, analyst, site):
    query = {"start": "2026-11-01T00:00:00Z", "end": "2026-11-03T00:00:00Z"}
    html = client.get(reverse("sessions_app:sessions", args=[site.id]), query).content.decode()
    assert _nav(html)["Funnels"] == {
        "period": ["custom"],
        "start": ["2026-11-01T00:00:00Z"],
        "end": ["2026-11-03T00:00:00Z"],
    }


@pytest.mark.parametrize(("page", "what"), [("sessions", "Sessions"), ("paths", "Paths")])
def test_a_period_longer_than_the_page_reads_is_cut_with_a_note(client, analyst, site, page, what):
    response = client.get(reverse(f"sessions_app:{page}", args=[site.id]), {"period": "12mo"})
    assert response.status_code == 200
    note = f"{what} cover at most 92 days: showing the last 92 days of Last 12 months"
    assert note in response.content.decode()


def test_the_api_takes_the_same_period_names(client, site, token):
    from tests.support.accounts import auth

    url = f"/api/sites/{site.id}/sessions"
    body = client.get(url, {"period": "12mo", "country": "DE"}, **auth(token)).json()
    assert body["filters"] == {"period": "12mo", "country": "DE"} and body["time_zone"] == "UTC"
    assert body["note"].startswith("Sessions cover at most 92 days")
    bad = client.get(url, {"period": "fortnight"}, **auth(token))
    assert bad.status_code == 400 and bad.json()["field"] == "period"
    bad = client.get(url, {"period": "custom", "from": "2026-13-01"}, **auth(token))
    assert bad.status_code == 400 and bad.json()["field"] == "from"
    paths = client.get(
        f"/api/sites/{site.id}/paths", {"period": "30d", "to": "/cart"}, **auth(token)
    )
    assert paths.json()["query"] == {"period": "30d", "to_page": "/cart"}  # an old `to` page
    accept = "application/vnd.oai.openapi+json"
    schema = client.get("/api/schema", HTTP_ACCEPT=accept, **auth(token)).json()
    names = {
        p["name"] for p in schema["paths"]["/api/sites/{site_id}/sessions"]["get"]["parameters"]
    }
    assert {"period", "from", "to", "compare", "start", "end"} <= names
