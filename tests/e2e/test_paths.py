"""Paths and transitions in headless Chromium: the Sankey from the session start, a
page's paths and its transitions, moving between them by links."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.ingest.pipeline import Source, events_record
from sessions_app.ledger import sites
from tests.conftest import member
from tests.e2e.conftest import screenshot
from tests.ingest.conftest import event

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]
SHOP = "https://shop.example"
VISITS = {
    "a": ["/", "/pricing", "/cart", "/checkout"],
    "b": ["/", "/pricing", "/docs"],
    "c": ["/blog", "/pricing", "/cart"],
    "d": ["/", "/cart", "/checkout"],
}


def test_sankey_top_paths_and_transitions(live_server, context):
    site = sites.site_create(name="Paths shop", origins=[live_server.url])
    user = User.objects.create_user("pa-ana", password="correct-horse-2")
    member(user, site)
    now = timezone.now()
    for anon, pages in VISITS.items():
        events_record(
            source=Source(site=site, received_at=now),
            raw_events=[
                event(now - timedelta(minutes=20 - n), anon=anon, url=SHOP + p)
                for n, p in enumerate(pages)
            ],
        )
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "pa-ana")
    page.fill("input[name=password]", "correct-horse-2")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/sites/{site.id}/")
    with page.expect_navigation():
        page.click("nav.main-nav a:text-is('Paths')")
    first = page.locator('#sankey g.node[data-step="1"]')
    assert sorted(
        first.evaluate_all("ns => ns.map(n => n.dataset.page + '=' + n.dataset.count)")
    ) == [
        "/=3",
        "/blog=1",
    ]
    assert page.locator("#sankey path.flow").count() >= 6
    rows = page.locator("table.paths tbody tr").all_inner_texts()
    assert any("/ → /pricing → /cart → /checkout\t1" in r for r in rows), rows
    screenshot(page, "paths-from-start")
    page.fill("input[name=from_page]", "/pricing")
    with page.expect_navigation():
        page.click("#paths-form button[type=submit]")
    second = page.locator('#sankey g.node[data-step="1"]')
    assert sorted(
        second.evaluate_all("ns => ns.map(n => n.dataset.page + '=' + n.dataset.count)")
    ) == [
        "/cart=2",
        "/docs=1",
    ]
    screenshot(page, "paths-from-pricing")
    with page.expect_navigation():
        page.click("a:text-is('transitions')")
    assert page.locator("#views").inner_text() == "3"
    came = page.locator("#came-from tr.page").all_inner_texts()
    assert sorted(came) == ["/\t2", "/blog\t1"]
    went = page.locator("#went-next").inner_text()
    assert "Exits\t0" in went and "/cart\t2" in went and "/docs\t1" in went
    screenshot(page, "transitions-pricing")
    with page.expect_navigation():
        page.click("#went-next >> text=/cart")
    assert page.locator("#views").inner_text() == "3"
    assert errors == []
