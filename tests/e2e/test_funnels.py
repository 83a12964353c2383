"""Funnels in headless Chromium on the demo shop's data: define one with the form, read
its numbers, open the people who dropped off and one of their timelines."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.domain.ledger import sites
from sessions_app.domain.system import demo
from tests.support.accounts import member
from tests.support.browser import screenshot

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]


def test_define_a_funnel_read_it_and_open_a_drop_off(live_server, context, settings):
    settings.FUNNEL_INLINE_DAYS = 100
    site = sites.site_create(name="Demo shop", origins=[live_server.url])
    demo.clicks_generate(site=site, users=40, days=3, now=timezone.now(), seed=11)
    user = User.objects.create_user("fu-ana", password="correct-horse-2")
    member(user, site, "admin")  # funnels are defined by the site's admins
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "fu-ana")
    page.fill("input[name=password]", "correct-horse-2")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/sites/{site.id}/")
    with page.expect_navigation():
        page.click("nav.main-nav a:text-is('Funnels')")
    page.fill("input[name=name]", "Product to checkout")
    page.select_option("select[name=step-1-kind]", "pageview")
    page.fill("input[name=step-1-value]", "/demo/products/")
    page.select_option("select[name=step-1-match]", "prefix")
    page.select_option("select[name=step-2-kind]", "event")
    page.fill("input[name=step-2-value]", "add_to_cart")
    page.select_option("select[name=step-3-kind]", "pageview")
    page.fill("input[name=step-3-value]", "/demo/cart")
    page.select_option("select[name=window_unit]", "session")
    with page.expect_navigation():
        page.click("#funnel-form button.primary")
    counts = [int(c) for c in page.locator("#funnel-steps td.count").all_inner_texts()]
    assert len(counts) == 3 and counts[0] > 0 and counts == sorted(counts, reverse=True), counts
    assert page.locator(".funnel-bars .step-bar").count() == 3
    screenshot(page, "funnel-results")
    dropped = counts[0] - counts[1]
    assert dropped > 0
    with page.expect_navigation():
        page.click("#funnel-steps tr[data-step='1'] a.dropped")
    rows = page.locator("#funnel-units tbody tr")
    assert rows.count() == min(dropped, 50)
    screenshot(page, "funnel-dropped-off")
    with page.expect_navigation():
        rows.first.locator("a.timeline-link").click()
    highlighted = page.locator("tr.funnel-chain")
    assert highlighted.count() == 1  # dropped off after step 1: the one step it took
    assert "step 1" in highlighted.first.inner_text()
    heading = highlighted.first.evaluate(
        "tr => tr.closest('tbody').querySelector('.page-heading').innerText"
    )
    assert "/products/" in heading  # the product page view that was step 1
    screenshot(page, "funnel-timeline")
    assert errors == []
