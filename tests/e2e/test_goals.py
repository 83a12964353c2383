"""Goals in headless Chromium on the demo shop's data: define a goal with the form, see
its backfill, then its row on the dashboard (1366x900 and 390x844), and filter by it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.domain.ledger import sites
from sessions_app.domain.system import demo
from sessions_app.foundation.models import Goal
from tests.support.accounts import member
from tests.support.browser import ARTIFACTS, screenshot

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]


def test_define_a_goal_and_see_it_on_the_dashboard(live_server, context, settings):
    site = sites.site_create(name="Demo shop", origins=[live_server.url])
    demo.clicks_generate(site=site, users=80, days=1, now=timezone.now(), seed=12)
    user = User.objects.create_user("go-adm", password="correct-horse-2")
    member(user, site, "admin")
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "go-adm")
    page.fill("input[name=password]", "correct-horse-2")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/sites/{site.id}/")
    with page.expect_navigation():
        page.click("nav.main-nav a:text-is('Goals')")
    page.fill("input[name=name]", "Reached checkout")
    page.select_option("select[name=kind]", "pageview")
    page.fill("input[name=value]", "/demo/checkout")
    with page.expect_navigation():
        page.click("#goal-form button[type=submit]")
    row = page.locator("table.goal-list tr", has_text="Reached checkout")
    assert row.count() == 1 and "viewed /demo/checkout" in row.inner_text()
    assert Goal.objects.get(site=site).backfill_state in ("queued", "running", "done")
    page.set_viewport_size({"width": 1366, "height": 900})
    screenshot(page, "goals-list-1366")
    page.goto(f"{live_server.url}/sites/{site.id}/?period=24h")
    line = page.locator("section.goals tr", has_text="Reached checkout")
    assert line.count() == 1
    cells = line.locator("td.num").all_inner_texts()
    assert int(cells[0]) > 0 and cells[2].endswith("%"), cells
    section = page.locator("section.goals")
    section.scroll_into_view_if_needed()
    screenshot(page, "goals-dashboard-1366")
    section.screenshot(path=str(ARTIFACTS / "goals-table-1366.png"))
    page.set_viewport_size({"width": 390, "height": 844})
    # The goal table scrolls inside its frame, never widening the page.
    box = page.evaluate(
        "() => { const s = document.querySelector('section.goals');"
        " return [s.scrollWidth, s.getBoundingClientRect().right]; }"
    )
    assert box[0] <= 390 and box[1] <= 390, box
    screenshot(page, "goals-dashboard-390")
    section.screenshot(path=str(ARTIFACTS / "goals-table-390.png"))
    with page.expect_navigation():
        line.locator("a.filter-link").click()
    assert "page=%2Fdemo%2Fcheckout" in page.url
    assert page.locator("section.goals tr", has_text="Reached checkout").count() == 1
    assert errors == []
