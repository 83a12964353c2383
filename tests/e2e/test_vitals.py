"""Web vitals in real headless Chromium on the demo shop: the About page is slow on
purpose (static/sessions_app/demo_vitals.js: a hero image that arrives after 4.2 s, a
banner put above the heading after 0.8 s). The tracker loads the vitals script only for
a site with vitals on; the page's LCP and CLS come back with their elements, and the
Performance page shows them (screenshots at 1366x900 and 390x844 in artifacts/)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from sessions_app.domain.ledger import sites
from sessions_app.domain.sessions import feed
from tests.support.accounts import member
from tests.support.browser import HUMAN_AGENT, screenshot, wait_for
from tests.support.sessions import stored_events

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
    pytest.mark.usefixtures("demo_any_site"),  # /demo/?site=KEY
]


def _events(site) -> list[dict[str, Any]]:
    found = []
    for entry in feed.feed_latest(site_id=site.id, limit=50):
        found.extend(stored_events(session_id=entry["session_id"]))
    return found


def _vitals(site) -> list[dict[str, Any]]:
    return [e for e in _events(site) if e.get("name") == "$vitals"]


def _visit_about(browser, live_server, site) -> tuple[Any, list[str]]:
    """One visit of the slow About page in a browser context of its own (as another
    customer's visitor would be: nothing kept from the other site's visit), left once the
    late hero image has loaded and been painted and everything the page asked for has
    arrived. The context stays open: the page's last beacons are still in flight (closing
    it cancels them), the caller closes it once the events are in."""
    context = browser.new_context(user_agent=HUMAN_AGENT, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    scripts: list[str] = []
    page.on("request", lambda r: scripts.append(r.url) if r.resource_type == "script" else None)
    page.goto(f"{live_server.url}/demo/about?site={site.key}&flush=60000")
    page.wait_for_function(
        "() => { const i = document.getElementById('about-hero');"
        " return i && i.complete && i.naturalWidth > 0"
        " && !!document.getElementById('promo-banner') }",
        timeout=30_000,
    )
    page.wait_for_load_state("networkidle")
    # Two frames after the image decoded: it has been painted (the LCP candidate).
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    page.wait_for_timeout(500)
    page.goto("about:blank")  # hidden: the page view, its leave and the vitals go out
    return context, scripts


def _arrived(site, check) -> Any:
    try:
        return wait_for(check, timeout=60)
    except AssertionError as failed:  # say what did arrive
        raise AssertionError(f"{failed}; the site's events: {_events(site)}") from None


def test_a_slow_image_and_a_layout_shift_show_up_with_their_elements(live_server, browser, context):
    off = sites.site_create(name="E2E no vitals", origins=[live_server.url])
    visit, scripts = _visit_about(browser, live_server, off)
    assert not [s for s in scripts if "vitals.min.js" in s]  # off: never loaded
    _arrived(off, lambda: {e["name"] for e in _events(off)} >= {"$pageleave"})
    visit.close()
    site = sites.site_create(name="E2E vitals", origins=[live_server.url])
    site.vitals = True
    site.save(update_fields=["vitals"])
    visit, scripts = _visit_about(browser, live_server, site)
    assert [s for s in scripts if s.endswith("/static/sessions_app/vitals.min.js")]

    def measured() -> list[dict[str, Any]] | None:
        found = _vitals(site)
        return found if any("lcp" in e["props"] for e in found) else None

    found = _arrived(site, measured)
    visit.close()
    # One event for the page view, at visibilitychange (Chromium's pagehide comes first,
    # before web-vitals has finalised LCP and CLS: vitals.js does not send there).
    assert len(found) == 1, found
    props = found[0]["props"]
    assert props["lcp"] >= 4_000 and "about-hero" in props["lcp_el"], props
    assert props["cls"] > 0 and props.get("cls_el"), props
    assert props["ttfb"] >= 0 and props["fcp"] > 0, props
    assert not _vitals(off)

    member(User.objects.create_user("vic", password="correct-horse-1"), site)
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "vic")
    page.fill("input[name=password]", "correct-horse-1")
    page.click("button[type=submit]")
    for width, height in ((1366, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{live_server.url}/sites/{site.id}/performance/?period=24h")
        lcp = page.locator('.vital[data-metric="lcp"]')
        assert lcp.get_attribute("data-rating") == "poor"
        assert "Poor" in lcp.inner_text()
        page.wait_for_selector('.vital-chart[data-metric="lcp"] canvas')
        screenshot(page, f"performance-{width}")
        page.click("#vitals-pages a")
        page.wait_for_selector(".vital-elements")
        expect(page.locator('.vital-elements[data-metric="lcp"]')).to_contain_text("about-hero")
        expect(page.locator('.vital-elements[data-metric="cls"] code').first).to_be_attached()
        screenshot(page, f"performance-page-{width}")
