"""The KPI row in headless Chromium: seven cards against the previous period, the one
charted marked, a card click charts its KPI, the numbers equal the report API's; at a
desktop and a phone width (screenshots in artifacts/)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.domain.aggregates import seal, states
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ledger import sites
from tests.support.accounts import member
from tests.support.browser import screenshot
from tests.support.conversion import purchase_goal
from tests.support.events import event

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]


def _traffic(site) -> None:
    """Ten days of visits, more in the last seven than the seven before; sealed."""
    now = timezone.now().replace(microsecond=0)
    for day in range(10, 0, -1):
        for visit in range(2 if day > 7 else 4):
            start = now - timedelta(days=day, minutes=7 * visit)
            views = 1 + (visit + day) % 3
            events_record(
                source=Source(site=site, received_at=start + timedelta(minutes=10)),
                raw_events=[
                    event(
                        start + timedelta(seconds=50 * i),
                        anon=f"a{day}-{visit}",
                        url=f"https://shop.example/p{i}",
                    )
                    for i in range(views)
                ]
                + (
                    [
                        event(
                            start + timedelta(seconds=200),
                            kind="custom",
                            name="purchase",
                            anon=f"a{day}-{visit}",
                        )
                    ]
                    if visit == 0
                    else []
                ),
            )
    for _ in range(4):
        for site_id, granularity, bucket in states.buckets_due(now=timezone.now()):
            if granularity == "hour":
                seal.bucket_seal(site_id=site_id, hour=bucket, now=timezone.now())
            else:
                seal.bucket_rollup(
                    site_id=site_id, granularity=granularity, bucket=bucket, now=timezone.now()
                )


def test_kpi_cards_compare_chart_on_click_and_match_the_api(live_server, context):
    site = sites.site_create(name="KPI shop", origins=[live_server.url])
    _traffic(site)
    member(User.objects.create_user("kim", password="correct-horse-1"), site, "admin")
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "kim")
    page.fill("input[name=password]", "correct-horse-1")
    page.click("button[type=submit]")
    query = "period=7d&compare=previous"
    page.goto(f"{live_server.url}/sites/{site.id}/?{query}")
    cards = page.locator(".kpi-row a.kpi")
    assert cards.count() == 6  # no goals, no conversion rate
    assert page.locator("a.kpi.selected").get_attribute("data-metric") == "visitors"
    api = page.request.get(f"{live_server.url}/api/sites/{site.id}/report?{query}").json()
    visits = page.locator("a.kpi[data-metric=visits] .kpi-value").inner_text()
    assert visits == f"{api['kpis']['visits']:,}"
    assert api["kpis"]["visits"] > api["comparison"]["kpis"]["visits"] > 0
    card = next(c for c in api["comparison"]["cards"] if c["key"] == "visits")
    change = page.locator("a.kpi[data-metric=visits] .kpi-change")
    assert card["change_text"].startswith("+") and card["change_text"] in change.inner_text()
    assert "good" in (change.get_attribute("class") or "")
    page.set_viewport_size({"width": 1366, "height": 900})
    screenshot(page, "dashboard-kpis-1366")
    page.locator("a.kpi[data-metric=bounce_rate]").click()
    page.wait_for_url("**metric=bounce_rate**")
    assert page.locator("a.kpi.selected").get_attribute("data-metric") == "bounce_rate"
    assert "compare=previous" in page.url  # the card link keeps the range
    page.locator("details.kpi-notes summary").click()
    notes = page.locator("details.kpi-notes").inner_text()
    assert "HyperLogLog" in notes and "add a goal to see a conversion rate" in notes
    assert api["conversion_goal"] is None and api["kpis"]["conversion_rate"] is None
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "dashboard-kpis-390")
    purchase_goal(site)  # the site's conversions are its goals: the card appears, named
    page.reload()
    assert cards.count() == 7
    card = page.locator("a.kpi[data-metric=conversion_rate]")
    assert card.locator(".kpi-label").inner_text() == "Conversion rate"
    assert card.locator(".kpi-sub").inner_text() == "Purchase"
    api = page.request.get(f"{live_server.url}/api/sites/{site.id}/report?{query}").json()
    assert api["conversion_goal"] == "Purchase" and api["kpis"]["conversion_rate"] is not None


SECOND = "https://shop.example/p1"


def _visit_now(site, anon: str) -> None:
    at = timezone.now() - timedelta(minutes=1)
    raw = [event(at, anon=anon, url="https://shop.example/"), event(at, anon=anon, url=SECOND)]
    events_record(source=Source(site=site, received_at=at), raw_events=raw)


def test_today_is_drawn_so_far_and_an_empty_comparison_says_so(live_server, context):
    """Comparison is on without asking; today's bucket, still in progress, is dashed, its
    tooltip and table row say "so far" and set it against nothing; a site whose earlier
    period had no visits says "no earlier data" on every card, not "no change"."""
    site = sites.site_create(name="KPI shop", origins=[live_server.url])
    _traffic(site)
    _visit_now(site, "today")
    fresh = sites.site_create(name="New shop", origins=[live_server.url])
    _visit_now(fresh, "first")
    kim = member(User.objects.create_user("kim", password="correct-horse-1"), site, "admin")
    member(kim, fresh, "admin")
    page = context.new_page()
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "kim")
    page.fill("input[name=password]", "correct-horse-1")
    page.click("button[type=submit]")

    page.goto(f"{live_server.url}/sites/{site.id}/")
    island = json.loads(page.locator("#dashboard-chart").text_content() or "{}")
    assert island["comparison"] is not None  # the previous period, by default
    assert island["partial"] == len(island["buckets"]) - 1  # 7 days, today last
    assert "so far" in page.locator(".chart-legend").inner_text()
    last = page.locator(".chart-table tbody tr").last
    assert "(so far)" in last.locator("th").inner_text()
    assert last.locator("td").last.inner_text() == "\u2013"  # no change computed
    over = page.locator(".u-over").bounding_box()
    assert over is not None
    page.mouse.move(over["x"] + over["width"] - 1, over["y"] + over["height"] / 2)
    tip = page.locator(".chart-tip")
    tip.wait_for(state="visible")
    assert "so far" in tip.inner_text()
    assert tip.locator(".tip-change").count() == 0  # not set against a whole day
    screenshot(page, "dashboard-so-far-1366")

    page.goto(f"{live_server.url}/sites/{fresh.id}/?period=30d")
    changes = page.locator("a.kpi .kpi-change").all_inner_texts()
    assert changes and {c.strip() for c in changes} == {"no earlier data"}, changes
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "dashboard-no-earlier-data-390")
