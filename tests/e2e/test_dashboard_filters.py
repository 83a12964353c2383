"""An analyst filters the dashboard in headless Chromium: a breakdown row adds a chip, the
numbers change, the explorer opens with the same filter, the chip comes off."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import expect

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ledger import sites
from tests.support.accounts import member
from tests.support.browser import ARTIFACTS, screenshot
from tests.support.events import event

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]

IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
    "Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
)
DESKTOP = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36"
)


def visits(site, now) -> None:
    """Six visits in the last hour (in the last 24 hours at any time of day): four from
    newsletter links on desktops, two from Google on phones."""
    for i in range(6):
        start = now - timedelta(minutes=20 + 7 * i)
        phone = i >= 4
        landing = (
            "/?utm_source=google&utm_medium=cpc"
            if phone
            else ("/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=spring%20sale")
        )
        events_record(
            source=Source(site=site, received_at=start, user_agent=IPHONE if phone else DESKTOP),
            raw_events=[
                event(
                    start + timedelta(seconds=30 * n),
                    anon=f"v{i}",
                    id=f"v{i}-{n}",
                    url="https://shop.example" + path,
                )
                for n, path in enumerate([landing, "/cart", "/checkout"][: 1 + i % 3])
            ],
        )


def test_a_row_filters_the_dashboard_and_travels_to_the_explorer(live_server, browser):
    site = sites.site_create(name="Filter shop", origins=[live_server.url])
    visits(site, timezone.now().replace(microsecond=0))
    member(User.objects.create_user("fay", password="correct-horse-2"), site)
    for width, height, name in ((1366, 900, "wide"), (390, 844, "phone")):
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("input[name=username]", "fay")
        page.fill("input[name=password]", "correct-horse-2")
        page.click("button[type=submit]")
        page.goto(f"{live_server.url}/sites/{site.id}/?period=24h")
        before = page.locator("figure[data-dimension=source] table tbody tr").all_inner_texts()
        assert len(before) == 2
        page.click("figure[data-dimension=device] table a.filter-link:has-text('mobile')")
        page.wait_for_selector(".chip:has-text('Device is mobile')")
        assert "device=mobile" in page.url and "period=24h" in page.url
        after = page.locator("figure[data-dimension=source] table tbody tr").all_inner_texts()
        assert len(after) == 1 and after[0].startswith("Google")  # the other breakdowns follow
        assert page.locator(".latest-sessions tbody tr").count() == 2
        assert "utm_" not in page.locator(".latest-sessions").inner_text()
        screenshot(page, f"dashboard-filtered-{name}")
        page.screenshot(path=str(ARTIFACTS / f"dashboard-filtered-{name}-top.png"))  # the viewport
        page.click("a.open-sessions:has-text('Open 2 sessions')")
        page.wait_for_selector("h1:has-text('Sessions')")
        assert page.locator("select[name=device]").input_value() == "mobile"
        expect(page.locator("table.explorer tbody tr")).to_have_count(2)
        page.go_back()
        page.click(".chip a.chip-remove")
        page.wait_for_url(lambda url: "device=" not in url)  # and the new page loaded
        assert page.locator(".chip").count() == 0
        expect(page.locator("figure[data-dimension=source] table tbody tr")).to_have_count(2)
        screenshot(page, f"dashboard-unfiltered-{name}")
        context.close()
