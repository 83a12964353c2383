"""The Users page in headless Chromium on the demo data, at 1366x900 and 390x844: recent
users (identified first), a prefix search that finds users by email, and a row that opens
the user's profile."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.domain.ledger import sites
from sessions_app.domain.system import demo
from tests.support.accounts import member
from tests.support.browser import HUMAN_AGENT, screenshot

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]


@pytest.mark.parametrize("width,height", [(1366, 900), (390, 844)])
def test_recent_users_and_a_prefix_search_open_a_profile(browser, live_server, width, height):
    site = sites.site_create(name="Demo shop", origins=[live_server.url])
    demo.clicks_generate(site=site, users=30, days=2, now=timezone.now(), seed=4)
    user = User.objects.create_user("ud-ana", password="correct-horse-2")
    member(user, site)
    context = browser.new_context(
        user_agent=HUMAN_AGENT, viewport={"width": width, "height": height}
    )
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "ud-ana")
    page.fill("input[name=password]", "correct-horse-2")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/sites/{site.id}/users/")
    rows = page.locator("table.users tbody tr")
    assert rows.count() > 10
    identified = rows.evaluate_all("rs => rs.map(r => !!r.querySelector('.tag'))")
    assert identified[0] and identified == sorted(identified, reverse=True)  # identified first
    screenshot(page, f"users-recent-{width}")
    assert page.locator("table.users a.user-key").first.inner_text().startswith("cust-")
    page.fill("input[name=q]", "CUST-0")
    with page.expect_navigation():
        page.press("input[name=q]", "Enter")
    found = page.locator("table.users a.user-key").all_inner_texts()
    assert found and all(k.startswith("cust-0") for k in found)
    screenshot(page, f"users-search-{width}")
    with page.expect_navigation():
        page.locator("table.users a.user-key").first.click()
    assert "/users/cust-0" in page.url
    context.close()
