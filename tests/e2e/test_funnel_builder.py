"""The funnel builder in headless Chromium: it starts with three rows; rows are added,
removed and moved in the page; the step kind's suggestions come from the site's recent
events; an error shows on the row it concerns, in plain words; a negative window is
flagged before posting; and a funnel's results fill in by themselves while its days are
computed (no reload)."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.domain.jobs.goal_backfill import goal_save
from sessions_app.domain.ledger import sites
from sessions_app.domain.system import demo
from sessions_app.features.funnels import defs
from sessions_app.foundation.core import timebuckets
from tests.support.accounts import member
from tests.support.browser import screenshot, wait_for
from tests.support.sealing import seal_everything

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]


def _login(page, live_server, name: str) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", "correct-horse-2")
    page.click("button[type=submit]")


def _values(page) -> list[str]:
    return page.locator("#step-rows .step-value").evaluate_all("els => els.map(e => e.value)")


def test_rows_are_added_removed_and_moved_and_errors_land_on_their_row(live_server, context):
    site = sites.site_create(name="Demo shop", origins=[live_server.url])
    demo.clicks_generate(site=site, users=12, days=1, now=timezone.now(), seed=5)
    user = User.objects.create_user("fb-ana", password="correct-horse-2")
    member(user, site, "admin")
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    _login(page, live_server, "fb-ana")
    # (the form with an error answers 400, which Chromium logs as a failed load)
    page.goto(f"{live_server.url}/sites/{site.id}/funnels/")
    rows = page.locator("#step-rows .step-row")
    assert rows.count() == 3
    page.select_option("select[name=step-1-kind]", "pageview")
    page.fill("input[name=step-1-value]", "/demo/products")
    page.select_option("select[name=step-2-kind]", "event")
    page.fill("input[name=step-2-value]", "add_to_cart")
    page.select_option("select[name=step-3-kind]", "event")
    page.fill("input[name=step-3-value]", "purchase")
    page.click("#add-step")
    assert rows.count() == 4 and page.locator("select[name=step-4-kind]").count() == 1
    page.select_option("select[name=step-4-kind]", "pageview")
    page.fill("input[name=step-4-value]", "/demo/cart")
    page.click("button[aria-label='Move step 4 up']")  # the cart before the purchase
    assert _values(page) == ["/demo/products", "add_to_cart", "/demo/cart", "purchase"]
    page.click("button[aria-label='Remove step 1']")
    assert _values(page) == ["add_to_cart", "/demo/cart", "purchase"]
    assert page.locator("#step-count").input_value() == "3"
    # suggestions for the row's kind, from the site's recent events
    wait_for(lambda: page.locator("#suggest-pageview option").count() > 0)
    suggested = page.locator("#suggest-pageview option").evaluate_all("os => os.map(o => o.value)")
    assert "/demo/products" in suggested and all(p.startswith("/demo/") for p in suggested)
    assert page.locator("input[name=step-2-value]").get_attribute("list") == "suggest-pageview"
    # a click step left empty: the error is on row 2, in plain words
    page.fill("input[name=name]", "Cart to purchase")
    page.select_option("select[name=step-2-kind]", "click")
    page.fill("input[name=step-2-value]", "")
    with page.expect_navigation():
        page.click("#funnel-form button.primary")
    error = page.locator("#step-rows .step-row.has-error")
    assert error.count() == 1 and error.locator(".step-n").inner_text() == "2"
    assert error.locator(".row-error").inner_text().startswith("Step 2: enter a CSS selector")
    screenshot(page, "funnel-builder-row-error")
    # a negative window is flagged before anything is posted
    page.fill("input[name=step-2-value]", "article#detail-grinder > button.btn")
    page.select_option("select[name=window_unit]", "hours")
    page.fill("input[name=window_value]", "-2")
    assert page.locator("#window-error").is_visible()
    page.click("#funnel-form button.primary")
    assert page.locator("#window-error").is_visible() and not site.funnels.exists()
    page.fill("input[name=window_value]", "12")
    with page.expect_navigation():
        page.click("#funnel-form button.primary")
    assert site.funnels.count() == 1 and "/funnels/" in page.url
    assert [e for e in errors if "status of 400" not in e] == []


def test_results_fill_in_by_themselves_while_days_are_computed(
    live_server, context, settings, celery_analysis_worker
):
    settings.FUNNEL_INLINE_DAYS = 0  # every sealed day goes to the analysis worker
    settings.ANALYSIS_TASKS_PER_SITE = 1  # one at a time: the progress is seen
    site = sites.site_create(name="Demo shop", origins=[live_server.url])
    now = timezone.now()
    demo.clicks_generate(site=site, users=30, days=4, now=now, seed=9)
    seal_everything(site, now)
    user = User.objects.create_user("fr-ana", password="correct-horse-2")
    member(user, site, "admin")
    funnel = defs.funnel_create(
        site=site,
        name="Browse to cart",
        definition={
            "steps": [
                {"kind": "pageview", "path": "/demo/products", "match": "prefix"},
                {"kind": "pageview", "path": "/demo/cart"},
            ]
        },
    )
    page = context.new_page()
    _login(page, live_server, "fr-ana")
    start = timebuckets.floor(now - timedelta(days=4), "day")
    end = timebuckets.floor(now, "day")  # sealed days only: all of them cold
    query = urlencode({"start": start.isoformat(), "end": end.isoformat()})
    page.goto(f"{live_server.url}/sites/{site.id}/funnels/{funnel.pk}/?{query}")
    assert page.locator("#progress").is_visible()  # days are being computed
    screenshot(page, "funnel-results-computing")
    navigations: list[str] = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    wait_for(lambda: page.locator("#progress").count() == 0, timeout=90)
    counts = [int(c) for c in page.locator("#funnel-steps td.count").all_inner_texts()]
    assert counts[0] > 0 and navigations == []  # filled in place, no reload
    screenshot(page, "funnel-results-complete")


def test_a_step_names_a_goal_from_its_own_menu(live_server, context):
    site = sites.site_create(name="Demo shop", origins=[live_server.url])
    demo.clicks_generate(site=site, users=12, days=1, now=timezone.now(), seed=5)
    goal = goal_save(
        site=site,
        name="Bought ✓",
        definition={"kind": "event", "name": "purchase"},
        now=timezone.now(),
    )
    user = User.objects.create_user("fb-goal", password="correct-horse-2")
    member(user, site, "admin")
    page = context.new_page()
    _login(page, live_server, "fb-goal")
    page.goto(f"{live_server.url}/sites/{site.id}/funnels/")
    page.select_option("select[name=step-1-kind]", "pageview")
    page.fill("input[name=step-1-value]", "/demo/products")
    menu, text = page.locator("select[name=step-2-goal]"), page.locator("input[name=step-2-value]")
    assert not menu.is_visible() and text.is_visible()
    page.select_option("select[name=step-2-kind]", "goal")
    assert menu.is_visible() and not text.is_visible()  # the goal's menu instead of the text
    assert not page.locator("select[name=step-2-match]").is_visible()  # the goal matches
    assert menu.locator("option").all_inner_texts() == ["Bought ✓"]
    page.fill("input[name=name]", "Products to a purchase")
    screenshot(page, "funnel-builder-goal")
    with page.expect_navigation():
        page.click("#funnel-form button.primary")
    funnel = site.funnels.get()
    assert funnel.current.definition["steps"][1]["goal"] == goal.pk
    assert page.get_by_text("reached Bought ✓").first.is_visible()
    screenshot(page, "funnel-goal-results")
