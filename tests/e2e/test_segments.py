"""Saved segments in headless Chromium (1366x900 and 390x844): filter the dashboard by a
breakdown row, save the filters as a shared segment from the picker, then apply it from
the picker on the unfiltered dashboard and on the sessions list."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.domain.ledger import sites
from sessions_app.domain.system import demo
from sessions_app.foundation.models import Segment
from tests.support.accounts import member
from tests.support.browser import screenshot

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]

SIZES = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.mark.parametrize("size", sorted(SIZES))
def test_save_a_segment_from_the_dashboard_and_apply_it_on_two_pages(live_server, context, size):
    site = sites.site_create(name="Segment shop", origins=[live_server.url])
    demo.clicks_generate(site=site, users=30, days=1, now=timezone.now(), seed=21)
    member(User.objects.create_user("seg-adm", password="correct-horse-5"), site, "admin")
    page = context.new_page()
    page.set_viewport_size(SIZES[size])
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "seg-adm")
    page.fill("input[name=password]", "correct-horse-5")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/sites/{site.id}/")
    with page.expect_navigation():  # the Devices breakdown's first row: a filter
        page.locator("figure[data-dimension='device'] a.filter-link").first.click()
    device = page.locator("li.chip[data-filter='device']").get_attribute("data-value") or ""
    chip = page.locator("li.chip[data-filter='device'] .chip-text").inner_text()
    page.click("#segment-picker > summary")
    page.fill("#segment-picker input[name=name]", "One device")
    page.check("#segment-picker input[name=shared]")
    screenshot(page, f"segments-save-{SIZES[size]['width']}")
    with page.expect_navigation():
        page.click("#segment-picker button[type=submit]")
    assert page.locator("#segment-picker > summary").inner_text() == "Segments: One device"
    saved = Segment.objects.get(site=site)
    assert saved.shared and list(saved.filters) == ["device"]
    device = saved.filters["device"]
    assert chip.endswith(device)
    # Applied from the picker of the unfiltered dashboard, then of the sessions list.
    for path in ("/", "/sessions/"):
        page.goto(f"{live_server.url}/sites/{site.id}{path}?period=24h")
        assert page.locator("li.chip[data-filter='device']").count() == 0 or path != "/"
        page.click("#segment-picker > summary")
        with page.expect_navigation():
            page.click("#segment-picker a.segment-link:text-is('One device')")
        assert f"device={device}" in page.url and "period=24h" in page.url
    assert page.locator("#segment-picker li.applied").count() == 1
    wide, room = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert wide <= room
    page.click("#segment-picker > summary")
    target = page.locator("#segment-picker a.segment-link").bounding_box()
    assert target and target["height"] >= 24  # a thumb's target on a phone
    screenshot(page, f"segments-applied-{SIZES[size]['width']}")
    assert errors == []
