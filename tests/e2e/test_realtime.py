"""The dashboard's "Right now" box updates itself (no reload) in headless Chromium."""

from __future__ import annotations

from datetime import timedelta

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


def test_visitors_right_now_update_without_a_reload(live_server, context, settings):
    settings.REALTIME_REFRESH_MS = 300  # the box's poll (5 s in production)
    site = sites.site_create(name="Realtime shop", origins=[live_server.url])
    user = User.objects.create_user("rt-ana", password="correct-horse-2")
    member(user, site)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "rt-ana")
    page.fill("input[name=password]", "correct-horse-2")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/sites/{site.id}/")
    assert page.locator("#realtime .rt-visitors").inner_text() == "0"
    loads = []
    page.on("load", lambda: loads.append(1))

    assert page.locator("#realtime .rt-noun").inner_text() == "visitors"
    assert "updated every 0.3 s" in page.locator("#realtime").inner_text()

    now = timezone.now()
    for visitor, path in (("rt-1", "/pricing"), ("rt-2", "/pricing"), ("rt-3", "/docs")):
        events_record(
            source=Source(site=site, received_at=now),
            raw_events=[
                event(now - timedelta(seconds=10), anon=visitor, url=f"https://x.example{path}")
            ],
        )
        if visitor == "rt-1":  # one visitor, not "1 visitors"
            expect(page.locator("#realtime .rt-visitors")).to_have_text("1", timeout=20_000)
            assert page.locator("#realtime .rt-noun").inner_text() == "visitor"
    expect(page.locator("#realtime .rt-visitors")).to_have_text("3", timeout=20_000)
    assert page.locator("#realtime .rt-noun").inner_text() == "visitors"
    rows = page.locator("#realtime .rt-pages tbody tr").all_inner_texts()
    assert [r.split("\t") for r in rows] == [["/pricing", "2"], ["/docs", "1"]]
    assert loads == [] and errors == []  # redrawn in place, nothing blocked by the CSP
