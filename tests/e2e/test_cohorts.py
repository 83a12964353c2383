"""The Cohorts page in headless Chromium: reached from the nav, its triangle, charts and
tables at 1366x900 and 390x844; a cell opens its users, a user opens their profile with
their cohort."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from sessions_app.domain.ledger import sites
from tests.support.accounts import member
from tests.support.browser import screenshot
from tests.support.cohorts import query_of, send
from tests.support.sealing import seal_due

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]
ACTIVE = {"ana": [8, 9, 16, 23], "bo": [8, 17], "cy-ü": [9, 16, 24], "dee": [15, 22, 29]}


def test_open_the_cohorts_and_a_cell(live_server, context, browser):
    site = sites.site_create(name="Cohort shop", origins=[live_server.url])
    for user, days in ACTIVE.items():
        for day in days:
            send(site, user, day, 45, signup=user == "bo")
    seal_due(site)
    User.objects.create_user("co-e2e", password="correct-horse-3")
    member(User.objects.get(username="co-e2e"), site)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "co-e2e")
    page.fill("input[name=password]", "correct-horse-3")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/sites/{site.id}/")
    with page.expect_navigation():
        page.click("nav.main-nav a:text-is('Cohorts')")
    query = "&".join(f"{k}={v}" for k, v in query_of("week").period.params().items())
    page.goto(f"{live_server.url}/sites/{site.id}/cohorts/?{query}&unit=week")
    assert page.locator("#cohort-table tbody tr").count() >= 4
    page.wait_for_selector("#curves-chart canvas")
    page.wait_for_selector("#lifecycle-chart canvas")
    page.wait_for_selector("#stickiness-chart canvas")
    screenshot(page, "cohorts-1366")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "cohorts-390")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1
    page.set_viewport_size({"width": 1366, "height": 900})
    with page.expect_navigation():
        page.locator("#cohort-table td.cell a").first.click()
    users = page.locator("#cohort-users li a").all_inner_texts()
    assert users and set(users) <= set(ACTIVE), users
    screenshot(page, "cohort-users")
    with page.expect_navigation():
        page.locator("#cohort-users li a").first.click()
    assert "First visit" in page.locator("#user-cohort").inner_text()
    assert errors == []
