"""The dashboard page's filters: rows that add one, chips that remove one, "Open N
sessions", a value of any text through the real collector and back, the budget's note,
the latest sessions without utm_* parameters, bad input and access."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sessions_app.domain.aggregates import report
from sessions_app.domain.ledger import sites
from sessions_app.features.analysis import session_filter
from sessions_app.foundation.tables import user_sessions
from sessions_app.templatetags.clickstream import without_utm
from tests.support.accounts import member
from tests.support.events import event, post
from tests.support.hypothesis import examples

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

SHOP = "https://shop.example"
HUMAN = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"  # noqa: E501


BOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


def visit(client, site, anon: str, *paths: str, minutes_ago: int = 30, agent: str = HUMAN) -> None:
    start = timezone.now().replace(microsecond=0) - timedelta(minutes=minutes_ago)
    events = [
        event(start + timedelta(seconds=30 * i), anon=anon, url=SHOP + path)
        for i, path in enumerate(paths)
    ]
    response = post(client, site, events, HTTP_USER_AGENT=agent, REMOTE_ADDR="81.2.69.142")
    assert response.status_code == 200, response.content


def dashboard(client, site, params: str = ""):
    return client.get(reverse("sessions_app:dashboard", args=[site.id]) + params)


def row_link(page_html: str, dimension: str) -> str:
    """The first row link of a breakdown's table, as a browser would follow it."""
    figure = page_html.split(f'data-dimension="{dimension}"', 1)[1].split("</figure>", 1)[0]
    return html.unescape(re.search(r'class="filter-link" href="([^"]*)"', figure).group(1))


def test_a_row_adds_its_filter_and_chips_remove_it(client, site, analyst):
    visit(client, site, "a1", "/?utm_source=news&utm_campaign=spring", "/pricing")
    visit(client, site, "a2", "/docs")
    page = dashboard(client, site, "?period=24h")
    assert page.context["filtered"] is None and page.context["chips"] == []
    link = row_link(page.content.decode(), "campaign")
    assert parse_qs(urlsplit(link).query) == {"period": ["24h"], "campaign": ["spring"]}
    filtered_page = dashboard(client, site, link)
    body = filtered_page.content.decode()
    answer = filtered_page.context["filtered"]
    assert answer.kpis.visits == 1 and answer.kpis.pageviews == 2 and answer.kpis.bounces == 0
    assert "Campaign is spring" in body and "Open 1 session<" in body
    [chip] = filtered_page.context["chips"]
    assert chip.name == "campaign" and chip.value == "spring"
    assert 'href="?period=24h"' in body  # the chip's remove link and "Clear all"
    sessions_url = reverse("sessions_app:sessions", args=[site.id])
    assert f'href="{sessions_url}?period=24h&amp;campaign=spring&amp;bot=false"' in body
    # Every other breakdown counts the filtered session only.
    assert [r["value"] for r in answer.breakdowns["source"]] == ["news"]
    assert [p for p, _ in answer.entry_pages] == ["/"]
    assert "Clicks cannot be filtered" in body
    # The explorer applies the same filter from the same parameters.
    explorer_page = client.get(sessions_url, {"period": "24h", "campaign": "spring"})
    assert [s["user_key"] for s in explorer_page.context["page"].sessions] == ["a1"]
    # Top pages are rows too: page=<path>.
    pages_html = dashboard(client, site, "?period=24h").content.decode()
    assert 'href="?period=24h&amp;page=%2Fdocs"' in pages_html


@settings(
    max_examples=examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(value=st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=260))
@example(value='Sale & "Spring" 50% off <b>#1</b> + Grüße')
@example(value="a=b&campaign=x; ' OR 1=1 --")
@example(value="\u6625\u306e\u30bb\u30fc\u30eb \U0001f338" * 30)
def test_any_visitor_text_renders_and_round_trips_as_a_filter(admin_client, value):
    site = sites.site_create(name="Any", origins=[SHOP])
    anon = "v-" + str(abs(hash(value)))
    visit(admin_client, site, anon, f"/?utm_source=s&utm_campaign={quote(value, safe='')}")
    [summary] = user_sessions.session_list(site_id=site.id, user_key=anon)
    stored = summary["campaign"]
    if not stored:  # only blanks: the visit has no campaign
        return
    page = dashboard(admin_client, site, "?period=24h")
    assert page.status_code == 200
    link = row_link(page.content.decode(), "campaign")
    after = dashboard(admin_client, site, link)
    assert after.status_code == 200 and after.context["filter_error"] == ""
    assert [c.value for c in after.context["chips"]] == [stored]
    assert after.context["filtered"].kpis.visits == 1
    assert html.escape(f"Campaign is {stored}") in after.content.decode()


def test_the_page_says_when_the_partition_budget_cut(client, site, analyst, monkeypatch):
    visit(client, site, "b1", "/")
    monkeypatch.setattr(session_filter, "MAX_PARTITIONS", 2)  # one day of two shards
    body = dashboard(client, site, "?period=7d&bot=false").content.decode()
    assert "Counted from the latest 1 day of the range; narrow the range or the filters." in body


def test_latest_sessions_follow_the_period_and_show_paths_without_utm(client, site, analyst):
    visit(client, site, "c1", "/pricing?id=5&utm_source=x&utm_medium=email", "/cart?utm_term=y")
    visit(client, site, "c2", "/old", minutes_ago=60 * 24 * 3)
    [summary] = user_sessions.session_list(site_id=site.id, user_key="c1")
    assert "utm_source=x" in summary["entry_url"]  # kept in the data
    recent = dashboard(client, site, "?period=24h")
    keys = [s["user_key"] for s in recent.context["latest"].sessions]
    assert keys == ["c1"]
    latest = recent.content.decode().split('class="latest"', 1)[1]
    assert "/pricing?id=5" in latest and "utm_" not in latest and "/cart<" in latest
    week = dashboard(client, site, "?period=7d")
    assert [s["user_key"] for s in week.context["latest"].sessions] == ["c1", "c2"]
    assert [
        s["user_key"]
        for s in dashboard(client, site, "?period=7d&entry=/old").context["latest"].sessions
    ] == ["c2"]
    assert "More sessions" in week.content.decode()


def test_latest_sessions_leave_bots_out_unless_the_filter_asks(client, site, analyst):
    """The dashboard says bots are excluded: its latest sessions are people's."""
    visit(client, site, "person", "/")
    visit(client, site, "crawler", "/", "/pricing", minutes_ago=20, agent=BOT)
    latest = dashboard(client, site, "?period=24h").context["latest"].sessions
    assert [s["user_key"] for s in latest] == ["person"]
    bots = dashboard(client, site, "?period=24h&bot=true").context["latest"].sessions
    assert [s["user_key"] for s in bots] == ["crawler"]


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://shop.example/a?utm_source=x&b=1&UTM_Medium=y#top", "/a?b=1"),
        ("https://shop.example/?utm_campaign=z", "/"),
        ("/p?x=%20y&utm_content=", "/p?x=%20y"),
        (None, ""),
    ],
)
def test_without_utm_drops_only_utm_parameters(url, shown):
    assert without_utm(url) == shown


def test_a_bad_filter_is_named_on_the_page(client, site, analyst):
    body = dashboard(client, site, "?converted=maybe").content.decode()
    assert "Filter not applied: converted" in body


def test_another_sites_member_gets_404_with_or_without_filters(client, site):
    other = sites.site_create(name="Other", origins=[])
    client.force_login(member(User.objects.create_user("mallory", password="pw-m-1234"), other))
    for params in ("", "?country=DE", "?period=30d&page=/pricing"):
        assert dashboard(client, site, params).status_code == 404
    assert dashboard(client, other, "?country=DE").status_code == 200


@pytest.mark.parametrize("route", ["sessions_app:funnels", "sessions_app:paths"])
def test_funnels_and_paths_say_which_filters_they_do_not_apply(client, site, analyst, route):
    url = reverse(route, args=[site.id])
    body = client.get(url, {"country": "DE", "converted": "true"}).content.decode()
    notice = body.split('class="notice filters-ignored"', 1)[1].split("</p>", 1)[0]
    assert "<strong>Country is DE</strong>, <strong>Converted: yes</strong>" in notice
    assert "filters-ignored" not in client.get(url).content.decode()


def test_a_filtered_dashboard_does_not_read_the_whole_sites_breakdowns(
    client, site, analyst, monkeypatch
):
    """Filtered, the page shows the filtered breakdowns alone: the site's own report is
    asked for without its breakdowns (~a third of its time on a 30-day range)."""
    visit(client, site, "bd-1", "/a", "/b")
    asked: list[bool] = []
    real = report.site_report_begin

    def recorded(**kwargs):
        asked.append(kwargs.get("breakdown", True))
        return real(**kwargs)

    monkeypatch.setattr(report, "site_report_begin", recorded)
    whole = dashboard(client, site, "?period=7d")
    assert whole.status_code == 200 and True in asked  # the breakdowns shown
    asked.clear()
    filtered = dashboard(client, site, "?period=7d&device=desktop")
    assert filtered.status_code == 200 and asked and True not in asked
    assert 'data-dimension="device"' in filtered.content.decode()  # its own breakdowns shown
