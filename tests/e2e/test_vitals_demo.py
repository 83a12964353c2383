"""The Performance page on a first run's demo data (what `make run` seeds: generated
visits with their `$vitals`, sealed), in headless Chromium at 1366x900 and 390x844
(screenshots performance-demo-*.png in artifacts/): five cards rated by Google's
thresholds with their units, the trend drawn, the About page first among the pages (its
late hero image) and its detail naming the elements to fix."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import expect

from sessions_app.domain.system import demo
from tests.support.accounts import member
from tests.support.browser import screenshot
from tests.support.sealing import seal_everything

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]


def test_the_demo_shops_performance_page_on_a_first_run(live_server, context):
    site, _ = demo.demo_site_ensure(origins=[live_server.url])
    now = timezone.now()
    # Eight days of the demo's visitors (make run writes 90; a visitor's returns come days
    # later, so 200 leave enough page views of each kind in the week): the 7-day page.
    assert demo.clicks_generate(site=site, users=200, days=8, now=now, seed=5) > 500
    seal_everything(site, timezone.now())  # the last hour or two stay live
    member(User.objects.create_user("vera", password="correct-horse-1"), site)
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "vera")
    page.fill("input[name=password]", "correct-horse-1")
    page.click("button[type=submit]")
    for width, height in ((1366, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{live_server.url}/sites/{site.id}/performance/?period=7d")
        cards = page.locator(".vital")
        assert cards.count() == 5
        for n in range(5):
            card = cards.nth(n)
            assert card.get_attribute("data-rating") in {"good", "ni", "poor"}
            text = card.inner_text()
            assert re.search(r"\d+ measured", text) and "good" in text, text
        assert re.search(
            r"\d ms|\d(\.\d+)? s", page.locator('.vital[data-metric="lcp"]').inner_text()
        )
        page.wait_for_selector('.vital-chart[data-metric="lcp"] canvas')
        screenshot(page, f"performance-demo-{width}")
        first = page.locator("#vitals-pages tbody tr").first
        assert "/demo/about" in first.inner_text()
        assert "rating-poor" in (first.locator("td").nth(2).get_attribute("class") or "")
        first.locator("a").click()
        page.wait_for_selector(".vital-elements")
        screenshot(page, f"performance-demo-page-{width}")
        # The new page parsed to its end: the elements are what the detail names.
        expect(page.locator('.vital-elements[data-metric="lcp"]')).to_contain_text("img#about-hero")
        expect(page.locator('.vital-elements[data-metric="cls"]')).to_contain_text("p#promo-banner")
