"""Replay chunks through the stored retry queue (docs/replay.md), in real headless Chromium
on the demo shop: the collector refuses chunks (503 from a Playwright route), the page
keeps them in the tab's sessionStorage queue, and the next page load of the tab sends
them; a chunk whose answer was lost after the collector stored it is sent again and
stored once (its chunk id); the queue is capped, the oldest dropped and counted once."""

from __future__ import annotations

import gzip
import json
import time
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from sessions_app.domain.ledger import quality, sites
from sessions_app.domain.sessions import feed
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from tests.support.browser import wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
    pytest.mark.usefixtures("demo_any_site"),  # /demo/?site=KEY
]

ROWS = "SELECT chunk_id, data FROM {ks}.replay_chunks WHERE site_id = ? AND session_id = ?"
STORE = "() => JSON.parse(sessionStorage.getItem('cs_replay_retry') || 'null')"
NEXT = "tab=next"  # in the URL of the tab's next page load
# Chunks the tab dropped so far: the stored count and the counts its kept chunks carry.
DROPPED = (
    f"() => {{ const s = ({STORE})() || {{chunks: []}};"
    " return (s.dropped || 0) + s.chunks.reduce((n, c) => n + (c.d || 0), 0); }"
)


def _chunk_id(body: bytes | None) -> str:
    return json.loads(gzip.decompress(body or b""))["chunk"]


def _until(page: Any, check: Any, timeout: float = 20.0) -> Any:
    """Poll check() while Playwright runs the page's route handlers (a plain sleep would
    hold them back: the sync API runs them inside its own calls)."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"condition not met within {timeout}s"
        page.wait_for_timeout(250)
    return value


def _steady(page: Any, check: Any, hold: float = 1.5, timeout: float = 20.0) -> Any:
    """Poll check() until it gives the same truthy value for `hold` seconds: a chunk the
    recorder had still buffered (its timer late on a busy machine) has gone out by then."""
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while True:
        value = check()
        if value != last:
            last, since = value, time.monotonic()
        elif value and time.monotonic() - since >= hold:
            return value
        assert time.monotonic() < deadline, f"condition not steady within {timeout}s"
        page.wait_for_timeout(250)


def _stored_ids(site) -> list[str]:
    """The chunk ids of the site's one session's stored rows (a repeat: stored twice)."""
    sessions = feed.feed_latest(site_id=site.id, limit=5)
    if len(sessions) != 1:
        return []
    rows = cassandra_session().execute(prepare(ROWS), (site.id, sessions[0]["session_id"]))
    return [str(r["chunk_id"]) for r in rows]


class Collector:
    """A Playwright route in front of POST /replay: the first chunk reaches the collector
    but its answer is replaced by a 503 (lost); every other request from a page whose
    URL lacks NEXT is answered 503 without reaching it; the next page's go through."""

    def __init__(self) -> None:
        self.lost: dict[str, int] = {}  # chunk id -> the collector's real answer
        self.refused: list[str] = []
        self.answers: list[tuple[str, int, dict[str, Any]]] = []

    def __call__(self, route: Any) -> None:
        chunk = _chunk_id(route.request.post_data_buffer)
        later = NEXT in route.request.all_headers().get("referer", "")
        lose = not self.lost and not later
        if not later and not lose:
            self.refused.append(chunk)
            route.fulfill(status=503, content_type="application/json", body="{}")
            return
        response = route.fetch()
        if lose:
            self.lost[chunk] = response.status
            route.fulfill(status=503, content_type="application/json", body="{}")
            return
        self.answers.append((chunk, response.status, response.json()))
        route.fulfill(response=response)

    def stored(self) -> dict[str, dict[str, Any]]:
        return {chunk: answer for chunk, status, answer in self.answers if status == 200}


def test_refused_chunks_are_sent_by_the_next_page_and_stored_once(live_server, context):
    site = sites.site_create(name="E2E replay retry", origins=[live_server.url])
    site.replay, site.replay_sample = True, 100
    site.save(update_fields=["replay", "replay_sample"])
    collector = Collector()
    page = context.new_page()
    page.route("**/replay?**", collector)
    page.goto(f"{live_server.url}/demo/?site={site.key}&flush=1000")
    page.wait_for_function("() => !!(window.clickstream && window.clickstream.last)")
    page.click("#shop-now")  # an SPA navigation
    page.locator("[data-view='/demo/products'] .add-to-cart").first.click()
    # The lost chunk, then a refused one (the next 5 s chunk) wait in the tab's queue.
    queue = f"n => (({STORE})() || {{chunks: []}}).chunks.length >= n"
    page.wait_for_function(queue, arg=1, timeout=20_000)
    page.locator("[data-view='/demo/products'] .add-to-cart").nth(1).click()
    page.wait_for_function(queue, arg=2, timeout=20_000)
    queued = [c["id"] for c in page.evaluate(STORE)["chunks"]]
    lost = next(iter(collector.lost))
    assert collector.lost[lost] == 200  # the collector had stored it: only the answer was lost
    assert lost in queued and set(queued) - {lost} <= set(collector.refused)
    # A full page load of the same tab (not an SPA step): its recorder sends the queue.
    page.goto(f"{live_server.url}/demo/about?site={site.key}&flush=1000&{NEXT}")
    answered = _until(page, lambda: collector.stored().keys() >= set(queued) and collector.stored())
    assert answered[lost]["duplicate"] is True  # sent again, counted once
    assert all(answered[c]["duplicate"] is False for c in queued if c != lost)
    page.wait_for_function(f"() => !(({STORE})() || {{chunks: []}}).chunks.length")
    page.goto("about:blank")
    page.close()
    stored = wait_for(lambda: set(queued) <= set(ids := _stored_ids(site)) and ids, timeout=20)
    assert [c for c, n in Counter(stored).items() if n > 1] == []


def test_the_queue_is_capped_and_what_it_dropped_is_counted_once(live_server, context):
    """With the collector down, the queue keeps the newest 30 chunks (a shortened chunk
    interval fills it); every chunk dropped is counted once: the tab's count moves into
    the next chunk made (and on when that one is dropped in turn), and once the collector
    answers, its ingest_stats say how many chunks the tab lost."""
    site = sites.site_create(name="E2E replay cap", origins=[live_server.url])
    site.replay, site.replay_sample = True, 100
    site.save(update_fields=["replay", "replay_sample"])
    page = context.new_page()
    # The recorder's 5 s interval, made 100 ms for this page: a chunk every 0.1 s.
    page.add_init_script(
        "(() => { const si = window.setInterval; window.setInterval = (f, ms, ...a) =>"
        " si(f, ms === 5000 ? 100 : ms, ...a); })()"
    )
    bodies: list[dict[str, Any]] = []

    def down(route: Any) -> None:
        bodies.append(json.loads(gzip.decompress(route.request.post_data_buffer or b"")))
        route.fulfill(status=503, content_type="application/json", body="{}")

    page.route("**/replay?**", down)
    page.goto(f"{live_server.url}/demo/?site={site.key}&flush=1000")
    page.wait_for_function("() => !!(window.clickstream && window.clickstream.last)")
    # A DOM change every 50 ms: a chunk at every 100 ms tick, each refused.
    page.evaluate(
        "() => { window.ticking = setInterval(() =>"
        " document.body.setAttribute('data-t', Date.now()), 50); }"
    )
    page.wait_for_function(f"() => ({DROPPED})() >= 3", timeout=20_000)
    page.evaluate("() => clearInterval(window.ticking)")  # no change: no more chunks

    def made() -> list[str]:
        return list(dict.fromkeys(b["chunk"] for b in bodies))  # chunk ids, oldest first

    def quiet() -> tuple[int, int] | None:
        dropped, count = page.evaluate(DROPPED), len(made())
        return (dropped, count) if dropped and dropped == count - 30 else None

    # Quiet: every chunk made is either kept or counted as dropped, once.
    lost, _ = _steady(page, quiet)
    kept = [c["id"] for c in page.evaluate(STORE)["chunks"]]
    assert len(kept) == 30 and made()[0] not in kept and set(kept) <= set(made())
    # The collector answers again: the tab's next page sends its queue and a new chunk.
    page.unroute("**/replay?**")
    page.goto(f"{live_server.url}/demo/about?site={site.key}&flush=1000&{NEXT}")
    page.wait_for_function(f"() => !(({STORE})() || {{chunks: []}}).chunks.length", timeout=30_000)
    page.wait_for_function(f"() => !(({STORE})() || {{}}).dropped", timeout=30_000)
    page.close()

    def counted() -> int:
        now = timezone.now()
        hours = {
            timebuckets.floor(now - timedelta(minutes=m), timebuckets.Width.HOUR) for m in (0, 5)
        }
        return sum(
            quality.ingest_counts(site_id=site.id, hour=h)["rejected"].get("replay.dropped", 0)
            for h in hours
        )

    assert wait_for(lambda: counted() >= lost, timeout=20) and counted() == lost
