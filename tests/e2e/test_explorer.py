"""The session explorer in headless Chromium: filter with the form, share the URL, open a
session's timeline from its row; the dashboard's breakdown bars show their values."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlparse

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import expect

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ledger import sites
from tests.support.accounts import member
from tests.support.events import event

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]
SHOP = "https://shop.example"


def test_filter_share_and_open_a_session(live_server, context):
    site = sites.site_create(name="Explorer shop", origins=[live_server.url])
    user = User.objects.create_user("ex-ana", password="correct-horse-2")
    member(user, site)
    now = timezone.now()
    landings = {
        "mail-1": "/?utm_source=newsletter&utm_medium=email&utm_campaign=spring",
        "mail-2": "/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=spring",
        "plain": "/docs",
    }
    for i, (anon, landing) in enumerate(landings.items()):
        events_record(
            source=Source(site=site, received_at=now),
            raw_events=[
                event(now - timedelta(minutes=20 - i), anon=anon, url=SHOP + landing),
                event(now - timedelta(minutes=19 - i), anon=anon, url=SHOP + "/pricing"),
            ],
        )
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "ex-ana")
    page.fill("input[name=password]", "correct-horse-2")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/sites/{site.id}/")
    page.click("nav.main-nav >> text=Sessions")
    # The click returns once the navigation starts: wait for the page's rows, not the clock.
    expect(page.locator("table.explorer tbody tr")).to_have_count(3)
    page.fill("input[name=campaign]", "spring")
    page.select_option("select[name=medium]", "email")
    page.fill("input[name=page]", "/pricing")
    page.click("#explorer-filter button[type=submit]")
    page.wait_for_url("**campaign=spring**")
    rows = page.locator("table.explorer tbody tr")
    expect(rows).to_have_count(2)
    assert "mail-2" in rows.nth(0).inner_text()
    shared = page.locator("a.share").get_attribute("href")
    query = parse_qs(urlparse(shared).query)
    assert query["campaign"] == ["spring"] and query["medium"] == ["email"]
    # The shared URL, opened afresh, shows the same sessions.
    other = context.new_page()
    other.goto(shared)
    assert other.locator("table.explorer tbody tr").all_inner_texts() == rows.all_inner_texts()
    rows.nth(1).locator("a").first.click()
    # The click starts a navigation: its page is read once it has loaded (content() in
    # between read an empty document once).
    page.wait_for_url("**/sessions/**", wait_until="load")
    assert "mail-1" in page.content()
    page.goto(f"{live_server.url}/sites/{site.id}/")
    bar = page.locator('figure[data-dimension="campaign"] tr.bar-row td.label').first
    assert bar.get_attribute("title").startswith("spring: 2 sessions")
    assert errors == []
