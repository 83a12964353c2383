"""Share links in headless Chromium (1366x900 and 390x844): an admin makes a link locked
to a segment on the share links page, copies its URL; a viewer with no login opens it,
sees the segment's numbers with a chip that cannot be removed, no sessions or user ids,
adds and removes a filter of their own, and cannot leave the link's scope."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.domain.ledger import sites
from sessions_app.domain.system import demo
from sessions_app.foundation.models import Segment, ShareLink
from tests.support.accounts import member
from tests.support.browser import screenshot

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]

SIZES = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.mark.parametrize("size", sorted(SIZES))
def test_make_a_locked_link_and_open_it_without_a_login(live_server, browser, size, settings):
    site = sites.site_create(name="Shared shop", origins=[live_server.url])
    demo.clicks_generate(site=site, users=30, days=1, now=timezone.now(), seed=23)
    member(User.objects.create_user("share-adm", password="correct-horse-5"), site, "admin")
    Segment.objects.create(site=site, name="Desktops", filters={"device": "desktop"}, shared=True)
    admin = browser.new_context(viewport=SIZES[size])
    page = admin.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "share-adm")
    page.fill("input[name=password]", "correct-horse-5")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/sites/{site.id}/share/")
    page.fill("input[name=name]", "For the agency")
    page.select_option("select[name=segment]", label="Desktops")
    screenshot(page, f"share-links-new-{SIZES[size]['width']}")
    with page.expect_navigation():
        page.click("form.share-form button[type=submit]")
    link = ShareLink.objects.get(site=site)
    url = page.locator("code.share-url").first.inner_text()
    assert url == f"{live_server.url}/share/{link.slug}/"
    wide, room = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert wide <= room
    screenshot(page, f"share-links-{SIZES[size]['width']}")
    admin.close()

    viewer = browser.new_context(viewport=SIZES[size])  # nobody logged in
    shared = viewer.new_page()
    shared.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    shared.goto(url + "?period=24h")
    chip = shared.locator("li.chip[data-filter='device']")
    assert chip.locator(".chip-lock").count() == 1 and chip.locator(".chip-remove").count() == 0
    assert shared.locator(".kpi-value").count() >= 4
    assert shared.locator("section.latest, #segment-picker, nav.main-nav").count() == 0
    assert shared.locator(f"a[href*='/sites/'], a[href*='{site.id}']").count() == 0
    # A filter of the viewer's own, from a breakdown row, then removed from its chip.
    with shared.expect_navigation():
        shared.locator("figure[data-dimension='browser'] a.filter-link").first.click()
    assert shared.url.startswith(url)
    assert shared.locator("li.chip").count() == 2
    screenshot(shared, f"share-view-{SIZES[size]['width']}")
    with shared.expect_navigation():
        shared.locator("li.chip[data-filter='browser'] .chip-remove").click()
    assert shared.locator("li.chip").count() == 1
    assert shared.locator("li.chip[data-filter='device'] .chip-lock").count() == 1
    wide, room = shared.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert wide <= room
    # Past the link's rate: 429, said in the link's own frame.
    settings.SHARE_LINK_RATE = 0  # whatever this minute's count
    limited = shared.goto(url)
    assert limited and limited.status == 429 and limited.headers["retry-after"]
    assert shared.locator("h1").inner_text() == "Too many requests"
    screenshot(shared, f"share-limited-{SIZES[size]['width']}")
    errors[:] = [e for e in errors if "429 (Too Many Requests)" not in e]  # the page itself
    settings.SHARE_LINK_RATE = 120
    # Outside the link: the site's own pages ask for a login.
    shared.goto(f"{live_server.url}/sites/{site.id}/")
    assert "/accounts/login/" in shared.url
    viewer.close()
    assert errors == []
