"""Session replay in real headless Chromium on the demo shop (docs/replay.md): a visitor
clicks, navigates (SPA), adds to the cart and types a secret; the stored chunks never hold
the typed text nor a [data-cs-mask] element's text; the analyst's timeline plays the
session (the cart count at the end is the page's) and a row's ▶ seeks the player.
Replay off, a 0 % sample and opt-out send nothing. Screenshots in artifacts/."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from django.contrib.auth.models import User

from sessions_app.domain.ledger import sites
from sessions_app.domain.sessions import feed
from sessions_app.foundation.core.cql import cassandra_session, prepare
from tests.support.accounts import member
from tests.support.browser import ARTIFACTS, CHUNK_MS, Chunks, screenshot, wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
    pytest.mark.usefixtures("demo_any_site"),  # /demo/?site=KEY
]

SECRET = "4111 9999 8888 7777"
EMAIL = "secret.person@example.com"
MASKED = "12 Bean Street"
CHUNKS = "SELECT seq, data FROM {ks}.replay_chunks WHERE site_id = ? AND session_id = ?"
SIZES = """
SELECT seq, size, events, end_at, start_at FROM {ks}.replay_chunks
WHERE site_id = ? AND session_id = ?
"""


def _site(live_server, name: str, *, replay: bool = True, sample: int = 100):
    site = sites.site_create(name=name, origins=[live_server.url])
    site.replay, site.replay_sample = replay, sample
    site.save(update_fields=["replay", "replay_sample"])
    return site


def _stored(site) -> tuple[Any, str]:
    """The site's one session and the text of its stored chunks (inflated)."""
    sessions = feed.feed_latest(site_id=site.id, limit=5)
    if len(sessions) != 1:
        return None, ""
    session_id = sessions[0]["session_id"]
    rows = cassandra_session().execute(prepare(CHUNKS), (site.id, session_id))
    return session_id, "".join(gzip.decompress(r["data"]).decode() for r in rows)


def _login(page, live_server, site) -> None:
    """Log the page in as an analyst of the site."""
    member(User.objects.create_user("rita", password="correct-horse-1"), site)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "rita")
    page.fill("input[name=password]", "correct-horse-1")
    page.click("button[type=submit]")


def _watch(page) -> list[str]:
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url))
    return sent


def test_a_recorded_session_is_masked_and_plays_on_the_timeline(live_server, context):
    site = _site(live_server, "E2E replay")
    page = context.new_page()
    sent, chunks = _watch(page), Chunks(page)
    page.goto(f"{live_server.url}/demo/?site={site.key}&flush=1000&chunk={CHUNK_MS}")
    page.wait_for_function("() => !!(window.clickstream && window.clickstream.last)")
    page.click("#shop-now")  # an SPA navigation
    page.locator("[data-view='/demo/products'] .add-to-cart").first.click()
    page.locator("[data-view='/demo/products'] .add-to-cart").nth(1).click()
    page.locator("#login-email").press_sequentially(EMAIL, delay=10)
    page.click("#nav-cart")
    page.click("#checkout")
    page.locator("#card-number").press_sequentially(SECRET, delay=10)
    page.wait_for_timeout(500)
    cart = page.locator("#cart-count").inner_text()
    assert [u for u in sent if u.endswith("/static/sessions_app/replay.min.js")]
    chunks.all_stored()  # an interval's chunk: the checkout went out with it
    page.goto("about:blank")  # hidden: the rest goes out
    page.close()

    def recorded() -> tuple[Any, str] | None:
        session_id, text = _stored(site)
        return (session_id, text) if '"checkout"' in text or "Checkout" in text else None

    session_id, text = wait_for(recorded, timeout=30)
    sizes = [
        {
            "seq": r["seq"],
            "bytes": r["size"],
            "events": r["events"],
            "seconds": (r["end_at"] - r["start_at"]).total_seconds(),
        }
        for r in cassandra_session().execute(prepare(SIZES), (site.id, session_id))
    ]
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "replay-chunk-sizes.json").write_text(json.dumps(sizes))  # docs/replay.md
    assert "Coffee gear" in text  # the page itself is recorded
    for secret in (SECRET, SECRET.replace(" ", ""), EMAIL, MASKED, "Ana Example"):
        assert secret not in text, secret

    viewer = context.new_page()
    _login(viewer, live_server, site)
    errors: list[str] = []
    viewer.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    viewer.on("pageerror", lambda exc: errors.append(str(exc)))
    for width, height in ((1366, 900), (390, 844)):
        viewer.set_viewport_size({"width": width, "height": height})
        timeline = viewer.goto(f"{live_server.url}/sites/{site.id}/sessions/{session_id}/")
        # the page keeps style-src 'self': only the player's own frame allows inline styles
        assert timeline and "'unsafe-inline'" not in timeline.headers["content-security-policy"]
        viewer.wait_for_selector("#replay.ready", timeout=15_000)
        player = viewer.frame_locator("#replay iframe.replay-frame")
        assert player.locator(".rr-player").count() == 1
        viewer.locator("tr.event button.seek").last.click()  # the last event: the checkout
        frame = player.frame_locator(".replayer-wrapper iframe")
        count = frame.locator("#cart-count")
        wait_for(lambda count=count: count.inner_text() == cart, timeout=10)
        masked = frame.locator("#ship-to").inner_text()
        assert MASKED not in masked and "*" in masked
        screenshot(viewer, f"replay-{width}")
    assert errors == []


CASES = ["off", "not sampled", "opted out", "opted out before", "do not track"]


@pytest.mark.parametrize("case", CASES)
def test_nothing_is_recorded_without_consent_or_outside_the_sample(live_server, browser, case):
    site = _site(
        live_server, f"E2E {case}", replay=case != "off", sample=0 if case == "not sampled" else 100
    )
    context = browser.new_context(extra_http_headers={"DNT": "1"} if case == "do not track" else {})
    if case == "do not track":
        context.add_init_script("Object.defineProperty(navigator, 'doNotTrack', {get: () => '1'})")
    if case == "opted out before":  # a visitor who opted out on an earlier visit
        context.add_init_script("localStorage.setItem('cs_optout', '1')")
    page = context.new_page()
    sent = _watch(page)
    page.goto(f"{live_server.url}/demo/?site={site.key}&flush=1000&chunk={CHUNK_MS}")
    if case == "opted out":
        # opted out on this page: the recorder may have sent a chunk before; none after
        page.wait_for_function("() => !!(window.clickstream && window.clickstream.last)")
        page.evaluate("() => window.clickstream.optOut()")
        del sent[:]
    page.click("#shop-now")
    page.locator("[data-view='/demo/products'] .add-to-cart").first.click()
    page.wait_for_timeout(2 * CHUNK_MS)  # two of the recorder's intervals, were it recording
    page.goto("about:blank")
    page.wait_for_timeout(CHUNK_MS)
    context.close()
    assert not [u for u in sent if "/replay?" in u], case
    if case != "opted out":
        assert not [u for u in sent if "replay.min.js" in u], case


def test_the_chunks_name_the_trackers_events(live_server, context):
    site = _site(live_server, "E2E replay ids")
    page = context.new_page()
    chunks = Chunks(page)
    page.goto(f"{live_server.url}/demo/?site={site.key}&flush=1000&chunk={CHUNK_MS}")
    page.wait_for_function("() => !!(window.clickstream && window.clickstream.last)")
    page.click("#shop-now")
    chunks.all_stored()
    page.goto("about:blank")
    page.close()
    session_id, _ = wait_for(lambda: _stored(site)[1] and _stored(site), timeout=30)
    rows = cassandra_session().execute(prepare(CHUNKS), (site.id, session_id))
    bodies = [json.loads(gzip.decompress(r["data"])) for r in rows]
    assert bodies and all(b["last_event"] and b["anonymous_id"] for b in bodies)


def test_an_excluded_page_is_not_recorded_and_leaving_it_starts_a_recording(live_server, context):
    site = _site(live_server, "E2E replay excluded")
    site.replay_exclude = ["/demo/check*"]
    site.save(update_fields=["replay_exclude"])
    page = context.new_page()
    sent, chunks = _watch(page), Chunks(page)
    page.goto(f"{live_server.url}/demo/checkout?site={site.key}&flush=1000&chunk={CHUNK_MS}")
    page.wait_for_function("() => !!(window.clickstream && window.clickstream.last)")
    page.locator("#card-number").press_sequentially("1234", delay=10)
    page.wait_for_timeout(2 * CHUNK_MS)
    assert [u for u in sent if u.endswith("/replay.min.js")]  # loaded, but not recording
    assert not [u for u in sent if "/replay?" in u]
    page.click("#footer-products")  # an SPA navigation off the excluded page
    page.locator("[data-view='/demo/products'] .add-to-cart").first.click()
    chunks.all_stored()
    page.goto("about:blank")
    page.close()
    session_id, _ = wait_for(lambda: _stored(site)[1] and _stored(site), timeout=30)
    rows = cassandra_session().execute(prepare(CHUNKS), (site.id, session_id))
    events = [e for r in rows for e in json.loads(gzip.decompress(r["data"]))["events"]]
    metas = [e["data"]["href"] for e in events if e["type"] == 4]  # a recording's start
    assert metas and all("/demo/products" in href for href in metas), metas


BLOCKED_TEXT = "Cardholder Zebulon Quixote-Vantablack"
BLOCKED = (
    f'<div class="saved-card" data-cs-block><p>{BLOCKED_TEXT}</p>'
    '<img src="/static/sessions_app/favicon.svg?blocked-photo" alt="" width="96" height="96">'
    "</div>"
)


def test_a_blocked_element_is_never_stored_and_plays_as_a_placeholder(live_server, context):
    """The demo shop with a [data-cs-block] box (text and an image) put into its page: the
    stored chunks hold neither, the player shows a hatched box of the element's size."""
    site = _site(live_server, "E2E replay blocked")

    def with_blocked_box(route: Any) -> None:
        response = route.fetch()
        body = response.text().replace("<main>", "<main>" + BLOCKED, 1)
        route.fulfill(response=response, body=body)

    page = context.new_page()
    page.route(f"{live_server.url}/demo/**", with_blocked_box)
    chunks = Chunks(page)
    page.goto(f"{live_server.url}/demo/?site={site.key}&flush=1000&chunk={CHUNK_MS}")
    page.wait_for_function("() => !!(window.clickstream && window.clickstream.last)")
    box = page.locator(".saved-card").bounding_box()
    assert box and page.locator(".saved-card img").evaluate("img => img.complete")
    page.click("#shop-now")  # an SPA navigation: the box stays on the page
    chunks.all_stored()
    page.goto("about:blank")
    page.close()
    session_id, text = wait_for(lambda: "Coffee gear" in _stored(site)[1] and _stored(site))
    assert "saved-card" in text  # the box itself is recorded ...
    for secret in (BLOCKED_TEXT, "Zebulon", "blocked-photo", "favicon.svg"):
        assert secret not in text, secret  # ... nothing inside it

    viewer = context.new_page()
    _login(viewer, live_server, site)
    viewer.goto(f"{live_server.url}/sites/{site.id}/sessions/{session_id}/")
    viewer.wait_for_selector("#replay.ready", timeout=15_000)
    player = viewer.frame_locator("#replay iframe.replay-frame")
    frame = player.frame_locator(".replayer-wrapper iframe")
    placeholder = frame.locator(".saved-card")
    assert placeholder.evaluate("e => e.classList.contains('cs-blocked') && !e.children.length")
    size = placeholder.evaluate("e => [parseFloat(e.style.width), parseFloat(e.style.height)]")
    assert size == pytest.approx([box["width"], box["height"]], abs=1)
    screenshot(viewer, "replay-blocked")
