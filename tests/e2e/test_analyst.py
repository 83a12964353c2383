"""An analyst in headless Chromium: log in, find a user, open a session, page activity."""

from __future__ import annotations

import urllib.error
import urllib.request
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import expect

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ledger import sites
from tests.support.accounts import member
from tests.support.browser import screenshot
from tests.support.events import event


def _api_status(base: str, path: str, key: str) -> int:
    request = urllib.request.Request(base + path, headers={"Authorization": f"Token {key}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]


def test_analyst_journey(live_server, context):
    site = sites.site_create(name="Analyst shop", origins=[live_server.url])
    now = timezone.now().replace(microsecond=0)
    for day in range(3, 0, -1):  # three daily visits of 25 events: 75 events, 2 pages
        start = now - timedelta(days=day)
        events_record(
            source=Source(site=site, received_at=start + timedelta(hours=1)),
            raw_events=[
                event(
                    start + timedelta(seconds=20 * i),
                    anon="anon-ada",
                    user_id="ada",
                    id=f"d{day}-{i}",
                    url=f"https://shop.example/p{i % 4}",
                    **(
                        {
                            "type": "click",
                            "element": {"tag": "button", "id": f"b{i}", "text": "Add to cart"},
                        }
                        if i % 3
                        else {}
                    ),
                )
                for i in range(25)
            ],
        )
    user = User.objects.create_user("ana", password="correct-horse-1")
    member(user, site, "admin")  # admin of this site: its settings page opens too
    other = sites.site_create(name="Not ana's shop", origins=[])

    page = context.new_page()
    page.goto(f"{live_server.url}/")
    assert "/accounts/login/" in page.url
    page.fill("input[name=username]", "ana")
    page.fill("input[name=password]", "correct-horse-1")
    page.click("button[type=submit]")
    assert other.name not in page.content()  # the home page lists only ana's sites
    page.click(f"text={site.name}")
    page.wait_for_selector("h2:has-text('Latest sessions')")
    screenshot(page, "dashboard")

    page.click("text=Users")
    page.fill("input[name=q]", "ada")
    page.click("button:has-text('Search')")
    page.wait_for_selector("h1:has-text('ada')")
    rows = page.locator("table.sessions tbody tr")
    expect(rows).to_have_count(3)  # the new page parsed to its last row
    screenshot(page, "user-profile")

    rows.first.locator("a").first.click()
    page.wait_for_selector("table.timeline")
    expect(page.locator("tr.event")).to_have_count(25)
    assert page.locator("text=Add to cart").count() > 0
    screenshot(page, "session-timeline")

    page.go_back()
    page.click("text=Activity explorer")
    page.select_option("#range-period", "custom")  # the range picker every page shares
    page.fill("#range-from", (now - timedelta(days=4)).date().isoformat())
    page.fill("#range-to", now.date().isoformat())
    page.click("#range-apply")
    page.wait_for_selector("aside.panel")
    expect(page.locator("table.events tbody tr")).to_have_count(50)
    expect(page.locator("ul.partitions li").nth(2)).to_be_attached()  # a row per day read
    # Five day buckets: more than the IN maximum (4), so two IN-list queries at once.
    assert "2 IN-list queries over consecutive buckets" in page.locator("aside.panel").inner_text()
    screenshot(page, "activity")
    page.click("a.next")
    page.wait_for_selector("aside.panel")
    expect(page.locator("table.events tbody tr")).to_have_count(25)  # 75 in all, none repeated
    assert page.locator("a.next").count() == 0

    page.goto(f"{live_server.url}/sites/{site.id}/site")
    assert site.key in page.content()
    screenshot(page, "site")
    assert page.goto(f"{live_server.url}/sites/{other.id}/").status == 404
    page.goto(f"{live_server.url}/")

    # An API token made on the tokens page (its key shown once) reads ana's site only;
    # revoked there, it is refused.
    page.click(".settings-menu summary")  # the settings menu holds it
    page.click("text=API tokens")
    page.fill("input[name=name]", "notebook")
    page.fill("input[name=expires_days]", "30")
    page.click("button:has-text('Create')")
    key = page.locator("#new-token-key").inner_text().strip()
    screenshot(page, "api-tokens")
    assert _api_status(live_server.url, f"/api/sites/{site.id}/users/ada/sessions", key) == 200
    assert _api_status(live_server.url, f"/api/sites/{other.id}/users/ada/sessions", key) == 404
    page.goto(f"{live_server.url}/account/tokens/")
    assert page.locator("#new-token-key").count() == 0  # never shown again
    assert key not in page.content()
    page.click("button:has-text('Revoke')")
    page.click("#confirm-dialog .confirm-go")  # revoking asks first
    page.wait_for_selector("text=Token revoked")
    assert _api_status(live_server.url, f"/api/sites/{site.id}/users/ada/sessions", key) == 401

    # The API docs render under the same CSP (no inline script: Swagger UI from the sidecar).
    page.goto(f"{live_server.url}/api/docs")
    page.wait_for_selector(".opblock-summary-path", timeout=15000)
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert any(p.replace("\u200b", "").endswith("/users/{user_key}/activity") for p in paths)
    screenshot(page, "api-docs")
