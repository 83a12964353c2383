"""A minute of the demo shop recorded in headless Chromium, three page loads: the shop's
stylesheet (inlined by rrweb into each page load's snapshot) is stored once for the site
and every stored chunk names it instead of holding it; what is stored is smaller than
what the recorder sent. Writes the recorder's chunks (inflated) to
artifacts/replay-demo-session.json.gz: bench/replay_demo_session.json.gz is such a
recording (bench/replay.py's bytes per minute)."""

from __future__ import annotations

import gzip
import hashlib
import json
from typing import Any

import pytest

from sessions_app.domain.ledger import sites
from sessions_app.domain.sessions import feed
from sessions_app.foundation.core.cql import cassandra_session, prepare
from tests.support.browser import ARTIFACTS, wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,  # a minute of recording
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
    pytest.mark.usefixtures("demo_any_site"),  # /demo/?site=KEY
]

CHUNKS = "SELECT seq, size, data FROM {ks}.replay_chunks WHERE site_id = ? AND session_id = ?"
ASSET = (
    "SELECT size, writetime(data) AS written FROM {ks}.replay_assets WHERE site_id = ? AND hash = ?"
)
PAGE_LOADS = 3


def _browse(page, url: str, chunks: list[Any]) -> None:
    """About 20 s of a visitor on the shop: SPA navigations, the cart, scrolling. The
    page's clock (Playwright's) runs those seconds at once: its timers fire (the recorder's
    5 s chunks, the tracker's flushes) and its events are stamped as they would be."""
    page.goto(url)
    page.wait_for_function("() => !!(window.clickstream && window.clickstream.last)")
    page.click("#shop-now")
    for n in range(2):
        page.locator("[data-view='/demo/products'] .add-to-cart").nth(n).click()
        page.mouse.move(200 + 40 * n, 300 + 25 * n, steps=8)
        page.mouse.wheel(0, 400)
        page.clock.run_for(2_500)
    page.click("#nav-about")
    page.mouse.wheel(0, 600)
    page.clock.run_for(3_000)
    page.click("#nav-cart")
    page.clock.run_for(3_000)
    page.click("#nav-products")
    page.clock.run_for(5_500)  # the recorder's 5 s chunk
    for chunk in chunks:  # each one answered before the page is left
        chunk.response()


def test_a_minute_of_the_shop_stores_its_stylesheet_once(live_server, context):
    site = sites.site_create(name="E2E replay minute", origins=[live_server.url])
    site.replay, site.replay_sample = True, 100
    site.save(update_fields=["replay", "replay_sample"])
    context.clock.install()  # for every page of the context, across its page loads
    # A browser's Date.now() is a whole number of ms; the fake clock's is not after a timer
    # set with a fractional delay (the recorder's jittered retry), which sent_at refuses.
    context.add_init_script("Date.now = (now => () => Math.floor(now()))(Date.now)")
    page = context.new_page()
    sent: list[bytes] = []
    chunks: list[Any] = []

    def chunk_sent(request: Any) -> None:
        if request.method == "POST" and "/replay?" in request.url:
            sent.append(request.post_data_buffer)
            chunks.append(request)

    page.on("request", chunk_sent)
    for _ in range(PAGE_LOADS):  # a new page load: a new snapshot with the stylesheet
        _browse(page, f"{live_server.url}/demo/?site={site.key}&flush=1000", chunks)
    page.goto("about:blank")  # hidden: the rest goes out
    page.close()

    once = {}  # a retried chunk (a 409 before its session existed) was sent again
    for raw in sent:
        body = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
        once[body["chunk"]] = (body, raw)
    bodies = [body for body, _ in once.values()]

    def stored() -> list[dict[str, Any]] | None:
        sessions = feed.feed_latest(site_id=site.id, limit=5)
        if len(sessions) != 1:
            return None
        params = (site.id, sessions[0]["session_id"])
        rows = list(cassandra_session().execute(prepare(CHUNKS), params))
        return rows if len(rows) == len(once) else None

    rows = wait_for(stored, timeout=30)
    css = [
        s for b in bodies for s in _css_texts(b["events"]) if len(s.encode()) >= 1024
    ]  # the shop's stylesheet, once a page load
    assert len(css) >= PAGE_LOADS and len(set(css)) == 1
    digest = hashlib.sha256(css[0].encode()).hexdigest()
    [asset] = cassandra_session().execute(prepare(ASSET), (site.id, digest))
    assert asset["size"] == len(css[0].encode())
    texts = [gzip.decompress(r["data"]).decode() for r in rows]
    assert sum(t.count(digest) for t in texts) == len(css)
    assert all(css[0][:200] not in t for t in texts)
    assert sum(r["size"] for r in rows) < sum(len(raw) for _, raw in once.values())
    ARTIFACTS.mkdir(exist_ok=True)
    recording = json.dumps(bodies, separators=(",", ":")).encode()
    (ARTIFACTS / "replay-demo-session.json.gz").write_bytes(gzip.compress(recording))


def _css_texts(events: Any) -> list[str]:
    found, stack = [], [events]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            if isinstance(item.get("_cssText"), str):
                found.append(item["_cssText"])
            if item.get("isStyle") is True and isinstance(item.get("textContent"), str):
                found.append(item["textContent"])
            stack.extend(v for v in item.values() if isinstance(v, list | dict))
    return found
