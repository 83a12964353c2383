"""Paths and transitions in headless Chromium: the Sankey from the session start, a
page's paths and its transitions, moving between them by links."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.domain.aggregates.path_grams import ENTRANCE
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ledger import sites
from tests.support.accounts import member
from tests.support.browser import screenshot
from tests.support.events import event

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]
SHOP = "https://shop.example"
VISITS = {
    "a": ["/", "/pricing", "/cart", "/checkout"],
    "b": ["/", "/pricing", "/docs"],
    "c": ["/blog", "/pricing", "/cart"],
    "d": ["/", "/cart", "/checkout"],
}


def test_sankey_top_paths_and_transitions(live_server, context):
    site = sites.site_create(name="Paths shop", origins=[live_server.url])
    user = User.objects.create_user("pa-ana", password="correct-horse-2")
    member(user, site)
    now = timezone.now()
    for anon, pages in VISITS.items():
        events_record(
            source=Source(site=site, received_at=now),
            raw_events=[
                event(now - timedelta(minutes=20 - n), anon=anon, url=SHOP + p)
                for n, p in enumerate(pages)
            ],
        )
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "pa-ana")
    page.fill("input[name=password]", "correct-horse-2")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/sites/{site.id}/")
    with page.expect_navigation():
        page.click("nav.main-nav a:text-is('Paths')")
    first = page.locator('#sankey g.node[data-step="1"]')
    assert sorted(
        first.evaluate_all("ns => ns.map(n => n.dataset.page + '=' + n.dataset.count)")
    ) == [
        "/=3",
        "/blog=1",
    ]
    assert page.locator("#sankey path.flow").count() >= 6
    rows = page.locator("table.paths tbody tr").all_inner_texts()
    assert any("/ → /pricing → /cart → /checkout\t1" in r for r in rows), rows
    screenshot(page, "paths-from-start")
    page.fill("input[name=from_page]", "/pricing")
    with page.expect_navigation():
        page.click("#paths-form button[type=submit]")
    second = page.locator('#sankey g.node[data-step="1"]')
    assert sorted(
        second.evaluate_all("ns => ns.map(n => n.dataset.page + '=' + n.dataset.count)")
    ) == [
        "/cart=2",
        "/docs=1",
    ]
    screenshot(page, "paths-from-pricing")
    with page.expect_navigation():
        page.click("a:text-is('transitions')")
    assert page.locator("#views").inner_text() == "3"
    came = page.locator("#came-from tr.page").all_inner_texts()
    assert sorted(came) == ["/\t2", "/blog\t1"]
    went = page.locator("#went-next").inner_text()
    assert "Exits\t0" in went and "/cart\t2" in went and "/docs\t1" in went
    screenshot(page, "transitions-pricing")
    with page.expect_navigation():
        page.click("#went-next >> text=/cart")
    assert page.locator("#views").inner_text() == "3"
    assert errors == []


# Long and any-script pages, five page views deep: the labels must be cut, not spill.
LONG = [
    "/produkte/überraschungs-angebote-für-die-ganze-familie-und-freunde",
    "/日本語のページ/とても長いパス名のページです/もっと長く",
    "/WWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWW",
    "/ألعاب/عربية-طويلة-جدا-للاختبار-والتحقق",
    "/emoji/😀🎉🚀-party-page-with-a-long-tail-e\u0301e\u0301e\u0301",
]
LABEL_BOXES = """svg => {
  const box = r => { const b = r.getBoundingClientRect();
                     return {l: b.left, r: b.right, t: b.top, b: b.bottom}; };
  return {
    svg: box(svg),
    nodes: [...svg.querySelectorAll('g.node')].map(g => ({
      step: g.dataset.step, rect: box(g.querySelector('rect')), text: box(g.querySelector('text')),
      label: g.querySelector('text').firstChild.data,
      title: g.querySelector('text title')?.textContent ?? '',
    })),
  };
}"""


def _meet(a: dict, b: dict) -> bool:
    return a["l"] < b["r"] and b["l"] < a["r"] and a["t"] < b["b"] and b["t"] < a["b"]


@pytest.mark.parametrize("width,height", [(1366, 900), (390, 844)])
def test_sankey_labels_stay_in_their_column(live_server, context, width, height):
    site = sites.site_create(name="Long paths", origins=[live_server.url])
    User.objects.create_superuser("pa-root", password="correct-horse-3")
    now = timezone.now()
    for anon, shift in (("x", 0), ("y", 1), ("z", 2), ("w", 3)):
        pages = LONG[shift:] + LONG[:shift]
        events_record(
            source=Source(site=site, received_at=now),
            raw_events=[
                event(now - timedelta(minutes=20 - n), anon=anon, url=SHOP + p)
                for n, p in enumerate(pages)
            ],
        )
    page = context.new_page()
    page.set_viewport_size({"width": width, "height": height})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "pa-root")
    page.fill("input[name=password]", "correct-horse-3")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/sites/{site.id}/paths/")
    drawn = page.locator("#sankey").evaluate(LABEL_BOXES)
    screenshot(page, f"paths-long-labels-{width}")
    nodes = drawn["nodes"]
    assert {n["step"] for n in nodes} == {"0", "1", "2", "3", "4", "5"}
    assert any(n["label"].endswith(")") and "…" in n["label"] for n in nodes)  # some were cut
    svg = drawn["svg"]
    for node in nodes:
        text = node["text"]
        assert svg["l"] <= text["l"] and text["r"] <= svg["r"] + 0.5, node  # not cut off
        assert node["title"].lstrip("\u2068").startswith((*LONG, ENTRANCE)), node  # whole
        for other in nodes:
            if other is node:
                continue
            if other["step"] != node["step"]:
                assert not _meet(text, other["rect"]), (node, other)  # another column's node
            assert not _meet(text, other["text"]), (node, other)  # another label
    # the page itself never scrolls sideways: the Sankey scrolls in its frame
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    # ... and says so, when it does: a line under it, and its box and edge shadows.
    frame = page.locator("#sankey-frame")
    scrolls = frame.evaluate("f => f.scrollWidth > f.clientWidth + 1")
    assert page.locator("#sankey-hint").is_visible() == scrolls
    if width == 390:
        assert scrolls and "all 6 columns" in page.locator("#sankey-hint").inner_text()
        assert "scrolls" in (frame.get_attribute("class") or "")
        last = page.locator('#sankey g.node[data-step="5"] rect').first
        shown = "([f, r]) => r.getBoundingClientRect().right <= f.getBoundingClientRect().right"
        assert not page.evaluate(shown, [frame.element_handle(), last.element_handle()])
        frame.evaluate("f => { f.scrollLeft = f.scrollWidth; }")  # a swipe to its end
        assert page.evaluate(shown, [frame.element_handle(), last.element_handle()])
        screenshot(page, "paths-long-labels-390-scrolled")
    assert errors == []
