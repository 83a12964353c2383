"""Heatmaps in real headless Chromium on the demo shop: what the tracker records about
clicks and scrolling, the grid cells it lands in, and the overlay on the page itself."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.domain.aggregates.heatmaps import GRID_COLUMNS, ROW_PX
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ledger import sites
from sessions_app.domain.sessions import feed
from sessions_app.features.heatmaps import reads
from tests.support.accounts import member
from tests.support.browser import screenshot, wait_for
from tests.support.events import event
from tests.support.sessions import stored_events

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
    pytest.mark.usefixtures("demo_any_site"),  # /demo/?site=KEY
]


def _events(site) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for entry in feed.feed_latest(site_id=site.id, limit=50):
        events.extend(stored_events(session_id=entry["session_id"]))
    return sorted(events, key=lambda e: e["ts"])


def _open(context, live_server, site, height: int = 800):
    page = context.new_page()
    page.set_viewport_size({"width": 1280, "height": height})
    page.goto(f"{live_server.url}/demo/?site={site.key}&flush=60000")
    page.wait_for_function("window.clickstream && typeof clickstream.track === 'function'")
    return page


def _point(page, selector: str, fx: float = 0.5, fy: float = 0.5) -> dict[str, float]:
    """A point inside the element (fractions of its box), in page and client px."""
    return page.evaluate(
        """([s, fx, fy]) => { const r = document.querySelector(s).getBoundingClientRect();
           const x = r.left + r.width * fx, y = r.top + r.height * fy;
           return {x, y, pageX: x + scrollX, pageY: y + scrollY,
                   width: document.documentElement.scrollWidth}; }""",
        [selector, fx, fy],
    )


def test_clicks_land_in_their_cells_rage_dead_and_scroll_are_recorded(live_server, context):
    site = sites.site_create(name="E2E heat", origins=[live_server.url])
    page = _open(context, live_server, site, height=360)  # the home page is taller: it scrolls
    # Three clicks on one spot within a second: the third is a rage click.
    spot = _point(page, "h1", 0.2, 0.5)  # plain text: nothing happens, a dead click
    for _ in range(3):  # a person's clicks are some 100 ms apart (the tracker counts one
        page.mouse.click(spot["x"], spot["y"])  # of two within 50 ms: a label's echo)
        page.wait_for_timeout(120)
    page.wait_for_timeout(1_300)  # the dead-click second
    link = _point(page, "#nav-about", 0.25, 0.75)  # a link: it navigates (pushState)
    page.mouse.click(link["x"], link["y"])
    page.evaluate("history.back()")
    page.wait_for_timeout(300)
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    page.wait_for_timeout(300)
    page.goto("about:blank")  # page hide: clicks, readings and the rest go out

    def arrived() -> list[dict[str, Any]] | None:
        events = _events(site)
        return events if sum(x["type"] == "click" for x in events) >= 4 else None

    events = wait_for(arrived)
    clicks = [e for e in events if e["type"] == "click"]
    on_text = [c for c in clicks if c["element"]["tag"] == "h1"]
    assert [bool(c["layout"].get("rage")) for c in on_text] == [False, False, True]
    assert all(c["layout"].get("dead") for c in on_text)
    [about] = [c for c in clicks if c["element"].get("id") == "nav-about"]
    assert not about["layout"].get("dead") and not about["layout"].get("rage")
    for click, at in ((on_text[0], spot), (about, link)):
        layout = click["layout"]
        assert layout["vp"] == ">1024"
        assert layout["x"] == pytest.approx(at["pageX"] / at["width"], abs=0.002)
        assert abs(layout["y"] - at["pageY"]) <= 1
    assert about["layout"]["ex"] == pytest.approx(0.25, abs=0.05)
    assert about["layout"]["ey"] == pytest.approx(0.75, abs=0.1)
    leaves = [e for e in events if e["name"] == "$pageleave"]
    assert max(e["props"]["scroll"] for e in leaves) == 100
    assert {e["props"]["fold"] for e in leaves} == {360}

    # The live hour's heatmap: each click in the cell its position gives.
    now = timezone.now()
    heat, clicks, live = reads.page_heat(
        site_id=site.id,
        page="/demo/",
        vp=">1024",
        start=now.replace(minute=0, second=0, microsecond=0),
        end=now,
    )
    assert live >= 1 and clicks[">1024"] == heat.clicks >= 4
    expected = {
        int(at["pageY"]) // ROW_PX * GRID_COLUMNS + int(at["pageX"] / at["width"] * GRID_COLUMNS)
        for at in (spot, link)
    }
    assert expected <= set(heat.cells)
    h1 = next(v for k, v in heat.elements.items() if k.endswith("h1"))
    assert h1[:3] == [3, 1, 3]
    assert heat.scroll[100] >= 1


def test_view_on_page_draws_the_overlay(live_server, context, client):
    site = sites.site_create(name="E2E overlay", origins=[live_server.url])
    page = _open(context, live_server, site)
    for selector in ("h1", "h1", "h1", "#shop-now"):  # shop-now goes to another page
        page.click(f"{selector} >> visible=true")
        page.wait_for_timeout(120)
    page.wait_for_timeout(1_300)
    page.goto("about:blank")
    wait_for(lambda: sum(e["type"] == "click" for e in _events(site)) >= 4)

    analyst = User.objects.create_user("heat-analyst", password="pw-heat-1234")
    member(analyst, site)
    client.force_login(analyst)
    html = client.get(f"/sites/{site.id}/heatmaps/", {"page": "/demo/", "period": "7d"}).content
    url = unescape(re.search(rb'id="view-on-page" href="([^"]+)"', html).group(1).decode())
    assert url.startswith(f"{live_server.url}/demo/#cs-heatmap=")
    clicks = int(re.search(rb'<strong id="clicks">(\d+)</strong>', html).group(1))
    viewer = context.new_page()
    viewer.set_viewport_size({"width": 1366, "height": 900})  # the walk's desktop
    viewer.goto(url.replace("/demo/#", f"/demo/?site={site.key}#"))
    viewer.wait_for_selector("#cs-heatmap-overlay canvas", state="attached", timeout=15_000)
    # The toolbar names the page and the clicks; the clicked heading has its box and count.
    toolbar = viewer.inner_text("#cs-heatmap-overlay")
    assert "/demo/" in toolbar, toolbar
    # The answer arrived: the demo shop is this server's own origin, a same-origin read.
    wait_for(lambda: viewer.inner_text('[data-cs-part="total"]').strip())
    assert "origin" not in viewer.inner_text('[data-cs-part="notes"]')
    # It opens on the Heatmaps page's range, says which, and counts what the page counts.
    assert viewer.inner_text('[data-cs-part="total"]') == f"{clicks} clicks · Last 7 days"
    assert viewer.locator('[data-cs-part="range"]').input_value() == "page"
    fits = """b => [...b.querySelectorAll('select')].every(s =>
                 s.getBoundingClientRect().right <= b.getBoundingClientRect().right)"""
    assert viewer.locator('[data-cs-part="toolbar"]').evaluate(fits)  # a long range name too
    shown = viewer.inner_text('[data-cs-part="shown"]')
    assert re.fullmatch(r"\d+ \w+ \u2013 \d+ \w+ \d{4}", shown), shown
    viewer.wait_for_timeout(500)
    screenshot(viewer, "heatmap-overlay")
    assert len(viewer.screenshot(full_page=True)) > 10_000  # the overlay drew
    # The overlay page records nothing: the analyst's own visit is not counted.
    viewer.wait_for_timeout(500)
    events = _events(site)
    assert [
        e["url"].removeprefix(live_server.url).split("?")[0]
        for e in events
        if e["type"] == "pageview"
    ] == ["/demo/", "/demo/products"]
    assert not any("cs-heatmap" in (e["url"] or "") for e in events)


# Elements side by side at the top of the demo shop on a phone: their counts would overlap.
CLOSE = {
    "#nav-products": (9, "Products"),
    "#nav-about": (8, "About"),
    "#nav-cart": (7, "Cart (0)"),
    "#cart-count": (6, "0"),
    "#login-email": (5, ""),
    "#login-password": (4, ""),
    "#login-button": (3, "Log in"),
}


def _phone_clicks(live_server, site) -> None:
    """Clicks on CLOSE's elements in the phone layout, each with rage and dead ones."""
    now = timezone.now()
    raw, n = [], 0
    for selector, (clicks, text) in CLOSE.items():
        for i in range(clicks):
            n += 1
            element = {"tag": "a", "selector": selector, **({"text": text} if text else {})}
            raw.append(
                event(
                    now - timedelta(seconds=200 - n),
                    kind="click",
                    anon=f"phone{i}",
                    url=f"{live_server.url}/demo/",
                    element=element,
                    viewport=390,
                    pos={"x": 0.3, "y": 40, "ex": 0.5, "ey": 0.5},
                    rage=i < 2,
                    dead=i < 3,
                )
            )
    events_record(source=Source(site=site, received_at=now), raw_events=raw)


def _login(context, live_server, username: str, password: str, width: int, height: int):
    page = context.new_page()
    page.set_viewport_size({"width": width, "height": height})
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    with page.expect_navigation():
        page.click("button[type=submit]")
    return page


TAG_BOXES = """() => [...document.querySelectorAll('#cs-heatmap-overlay [data-cs-part="tags"]')]
  .map(t => { const b = t.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; })"""


def test_on_a_phone_the_overlays_counts_never_overlap(live_server, context, client):
    site = sites.site_create(name="E2E phone heat", origins=[live_server.url])
    _phone_clicks(live_server, site)
    analyst = User.objects.create_user("heat-phone", password="pw-heat-1234")
    member(analyst, site)
    client.force_login(analyst)
    query = {"page": "/demo/", "vp": "<640", "period": "24h"}
    html = client.get(f"/sites/{site.id}/heatmaps/", query).content
    assert b'<strong id="clicks">42</strong>' in html
    url = unescape(re.search(rb'id="view-on-page" href="([^"]+)"', html).group(1).decode())
    viewer = context.new_page()
    viewer.set_viewport_size({"width": 390, "height": 844})
    viewer.goto(url.replace("/demo/#", f"/demo/?site={site.key}#"))
    wait_for(lambda: viewer.locator('#cs-heatmap-overlay [data-cs-part="box"]').count() or None)
    assert viewer.inner_text('[data-cs-part="total"]') == "42 clicks · Last 24 hours"
    found = viewer.evaluate(
        "s => s.filter(x => { const e = document.querySelector(x);"
        " const r = e && e.getBoundingClientRect(); return r && (r.width || r.height); }).length",
        list(CLOSE),
    )
    assert viewer.locator('[data-cs-part="box"]').count() == found >= 4  # every box drawn
    tags = viewer.evaluate(TAG_BOXES)
    assert 0 < len(tags) < found  # some counts left out ...
    for i, a in enumerate(tags):  # ... and the ones drawn never overlap
        for b in tags[i + 1 :]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)
    # No count runs off the page's right edge (the page would scroll sideways), and the
    # toolbar sits at the bottom, off the page's navigation where the clicks are.
    assert viewer.evaluate("document.documentElement.scrollWidth <= innerWidth")
    assert max(t[2] for t in tags) <= 390
    bar = viewer.locator('[data-cs-part="toolbar"]').bounding_box()
    assert bar["y"] > 844 / 2 and bar["y"] + bar["height"] <= 844
    notes = viewer.inner_text('[data-cs-part="notes"]')
    assert f"{found - len(tags)} count" in notes and "elements are close" in notes
    # The colour spots stay: the density canvas has coloured pixels.
    coloured = viewer.evaluate(
        """() => { const c = document.querySelector('#cs-heatmap-overlay canvas');
             const d = c.getContext('2d').getImageData(0, 0, c.width, Math.min(c.height, 200)).data;
             let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; }"""
    )
    assert coloured > 100
    screenshot(viewer, "heatmap-overlay-390")


@pytest.mark.parametrize("width,height", [(1366, 900), (390, 844)])
def test_top_clicks_show_what_elements_said_and_a_tap_on_a_row_filters(
    live_server, context, width, height
):
    site = sites.site_create(name="E2E top clicks", origins=[live_server.url])
    _phone_clicks(live_server, site)
    analyst = User.objects.create_user("heat-top", password="pw-heat-1234")
    member(analyst, site)
    page = _login(context, live_server, "heat-top", "pw-heat-1234", width, height)
    page.goto(f"{live_server.url}/sites/{site.id}/heatmaps/?page=/demo/&vp=%3C640&period=24h")
    rows = page.locator("#top-clicks tbody tr")
    assert rows.count() == len(CLOSE)
    labels = [t.strip() for t in page.locator("#top-clicks td.label").all_inner_texts()]
    assert labels == [text or selector for selector, (_, text) in CLOSE.items()]
    # An element that said nothing is named by its selector, smaller.
    code = page.locator("#top-clicks td.label code.selector").first
    assert code.inner_text() == "#login-email"
    small = code.evaluate("c => parseFloat(getComputedStyle(c).fontSize)")
    said = page.locator("#top-clicks td.label .said").first
    assert small < said.evaluate("c => parseFloat(getComputedStyle(c).fontSize)")
    boxes = rows.evaluate_all("rs => rs.map(r => r.getBoundingClientRect().height)")
    assert min(boxes) >= 24, boxes
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(page, f"heatmaps-top-clicks-{width}")
    # A tap on the row's far end (its Dead count, not its label) filters by the element.
    dead = rows.nth(1).locator("td.num").last.bounding_box()
    with page.expect_navigation():
        page.mouse.click(dead["x"] + dead["width"] / 2, dead["y"] + dead["height"] / 2)
    assert "element=%23nav-about" in page.url
    assert (
        page.locator('li.chip[data-filter="element"]').inner_text().startswith("Element is “About”")
    )
    assert page.locator("#top-clicks tbody tr").count() == 1
    assert page.locator("#frustrated tr.element").count() == 1
    screenshot(page, f"heatmaps-filtered-{width}")
    with page.expect_navigation():
        page.click('li.chip[data-filter="element"] a.chip-remove')
    assert "element" not in page.url
    assert page.locator("#top-clicks tbody tr").count() == len(CLOSE)
