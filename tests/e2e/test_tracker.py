"""The tracker in real headless Chromium, against the live collector, into Cassandra."""

from __future__ import annotations

import http.server
import json
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest
from django.contrib.auth.models import User

from sessions_app.domain.ledger import sites
from sessions_app.domain.sessions import feed, lists
from sessions_app.foundation.tables import user_sessions
from tests.support.accounts import member
from tests.support.browser import screenshot, wait_for
from tests.support.sessions import stored_events

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
    pytest.mark.usefixtures("demo_any_site"),  # /demo/?site=KEY
]


def _timeline(site, user_key: str | None = None) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for entry in feed.feed_latest(site_id=site.id, limit=50):
        if user_key is None or entry["user_key"] == user_key:
            events.extend(stored_events(session_id=entry["session_id"]))
    return sorted(events, key=lambda e: e["ts"])


def test_clicks_spa_navigation_and_page_hide_flush(live_server, context):
    site = sites.site_create(name="E2E shop", origins=[live_server.url])
    page = context.new_page()
    page.goto(f"{live_server.url}/demo/?site={site.key}&flush=60000")  # only size/hide flush
    page.wait_for_function("window.clickstream && typeof clickstream.track === 'function'")
    page.click("#shop-now")  # a click, then pushState → /demo/products
    page.click("#product-grinder .add-to-cart")
    page.fill("#login-password", "hunter2-secret")
    page.click("#login-password")
    page.click("#nav-about")  # pushState → /demo/about
    page.go_back()  # popstate → /demo/products
    screenshot(page, "demo-shop")
    page.goto("about:blank")  # page hide: the queue goes out with sendBeacon

    events = wait_for(lambda: len(_timeline(site)) >= 8 and _timeline(site))
    pageviews = [
        e["url"].split("?")[0].removeprefix(live_server.url)
        for e in events
        if e["type"] == "pageview"
    ]
    assert pageviews == ["/demo/", "/demo/products", "/demo/about", "/demo/products"]
    clicks = [e["element"] for e in events if e["type"] == "click"]
    assert {
        "tag": "button",
        "id": "shop-now",
        "classes": ["btn", "primary"],
        "text": "Shop now",
    }.items() <= clicks[0].items()
    assert clicks[0]["selector"].endswith("button#shop-now")
    assert any(c.get("text") == "Add to cart" for c in clicks)
    customs = [(e["name"], e["props"]) for e in events if e["type"] == "custom"]
    assert ("add_to_cart", {"product": "grinder"}) in customs
    stored = repr(events)
    assert "hunter2-secret" not in stored  # never an input's value
    assert not any(c.get("tag") == "input" and "password" in repr(c) for c in clicks)
    [entry] = feed.feed_latest(site_id=site.id)
    [summary] = user_sessions.session_list(site_id=site.id, user_key=entry["user_key"])
    assert summary["is_bot"] is False
    assert summary["pageview_count"] == 4
    assert (summary["viewport"], summary["device"]) == (">1024", "desktop")  # 1280 px wide


def test_secret_url_parameters_are_dropped_before_sending(live_server, context):
    """Defaults (token, session …) and the site's own redact list (rendered as data-redact)."""
    site = sites.site_create(name="E2E redact", origins=[live_server.url])
    site.redact_params = ["email"]
    site.save()
    page = context.new_page()
    page.goto(
        f"{live_server.url}/demo/?site={site.key}&flush=300&reset_token=T0K3N"
        "&email=ann%40example.com&PHPSESSID=S355#access_token=FR4G"
    )
    page.wait_for_function("window.clickstream && typeof clickstream.track === 'function'")
    assert page.get_attribute("script[data-site]", "data-redact") == "email"
    page.click("#shop-now")
    events = wait_for(lambda: len(_timeline(site)) >= 3 and _timeline(site))
    stored = json.dumps(events, default=str)
    for secret in ("T0K3N", "ann", "S355", "FR4G", "access_token"):
        assert secret not in stored, secret
    first = events[0]
    assert first["type"] == "pageview"
    assert first["url"] == f"{live_server.url}/demo/?site={site.key}&flush=300"


def test_identify_links_the_anonymous_visitor(live_server, context):
    site = sites.site_create(name="E2E identify", origins=[live_server.url])
    page = context.new_page()
    page.goto(f"{live_server.url}/demo/?site={site.key}&flush=300")
    page.wait_for_function("window.clickstream && typeof clickstream.track === 'function'")
    page.fill("#login-email", "ada@example.com")
    page.click("#login-button")
    page.click("#nav-products")
    wait_for(lambda: user_sessions.session_list(site_id=site.id, user_key="ada@example.com"))
    anonymous = page.evaluate("localStorage.getItem('cs_aid')")
    assert lists.identity_links(site_id=site.id, user_id="ada@example.com") == [anonymous]


class _Proxy:
    """A real HTTP hop in front of the collector that can be taken down and brought back."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.port = 0
        self.server: http.server.ThreadingHTTPServer | None = None

    def start(self) -> None:
        upstream = self.upstream

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() in ("content-type", "origin", "user-agent")
                }
                request = urllib.request.Request(
                    upstream + self.path, data=body, headers=headers, method="POST"
                )
                try:
                    with urllib.request.urlopen(request, timeout=20) as answer:
                        status, data, reply = answer.status, answer.read(), answer.headers
                except urllib.error.HTTPError as error:
                    status, data, reply = error.code, error.read(), error.headers
                self.send_response(status)
                for name in ("Content-Type", "Access-Control-Allow-Origin", "Vary"):
                    if reply.get(name):
                        self.send_header(name, reply[name])
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        http.server.ThreadingHTTPServer.allow_reuse_address = True
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _retry_store(page: Any) -> list[str]:
    """Names (custom events) or types of what waits in the tracker's retry store."""
    return page.evaluate(
        "JSON.parse(localStorage.getItem('cs_retry') || '[]').map(e => e.name || e.type)"
    )


def test_events_are_retried_after_the_collector_was_down(live_server, context):
    site = sites.site_create(name="E2E retry", origins=[live_server.url])
    proxy = _Proxy(live_server.url)
    proxy.start()
    proxy.stop()  # the collector is down: connections to its port are refused
    page = context.new_page()
    page.goto(f"{live_server.url}/demo/?site={site.key}&flush=300&endpoint={proxy.url}/collect")
    page.wait_for_function("window.clickstream && typeof clickstream.track === 'function'")
    page.click("#nav-products")
    page.click("#product-kettle .add-to-cart")
    # The first flush can fail before the clicks are recorded: wait for the last event
    # (the add_to_cart the second click tracks), not for the first one stored.
    stored = wait_for(lambda: "add_to_cart" in _retry_store(page) and _retry_store(page))
    assert {"pageview", "click", "add_to_cart"} <= set(stored)
    assert feed.feed_latest(site_id=site.id) == []

    proxy.start()  # the collector is back on the same port
    try:
        events = wait_for(lambda: len(_timeline(site)) >= 4 and _timeline(site), timeout=90)
        assert {e["type"] for e in events} == {"pageview", "click", "custom"}
        wait_for(lambda: _retry_store(page) == [])
    finally:
        proxy.stop()


# Where each demo-shop control navigates (pushState), for the order test below.
_TARGETS = {"shop-now": "/demo/products", "nav-about": "/demo/about", "nav-cart": "/demo/cart"}


@pytest.mark.parametrize("clock", ["running", "stopped"])
def test_every_click_precedes_the_page_view_it_caused(live_server, context, client, token, clock):
    """50 SPA navigations by click: the timeline, the API and the activity explorer list
    each click, then the $pageleave of the page it left, before the pushState page view
    it caused. With the page's clock stopped (Date.now frozen at load), all 151 events
    share one millisecond and travel in several requests: only the tracker's microsecond
    counter orders them."""
    site = sites.site_create(name="E2E order", origins=[live_server.url])
    member(User.objects.get(username="api-user"), site)  # the token's user reads it
    page = context.new_page()
    sent: list[dict] = []
    page.on(
        "request",
        lambda r: (
            r.url.endswith("/collect")
            and r.post_data
            and sent.extend(json.loads(r.post_data)["events"])
        ),
    )
    if clock == "stopped":
        page.add_init_script("(() => { const t = Date.now(); Date.now = () => t; })()")
    page.goto(f"{live_server.url}/demo/?site={site.key}&flush=60000")
    page.wait_for_function("window.clickstream && typeof clickstream.track === 'function'")
    cycle = ["#shop-now", "#nav-about", "#nav-cart", "a.logo"]  # home → products → about → cart
    for i in range(50):
        page.click(cycle[i % 4])
    page.evaluate("clickstream.flush()")  # the rest of the queue, by fetch (not a beacon)

    def path(url: str) -> str:
        return url.split("?")[0].removeprefix(live_server.url)

    def target(element: dict) -> str:
        return _TARGETS.get(element.get("id", "")) or path(element["href"])

    [entry] = wait_for(lambda: feed.feed_latest(site_id=site.id))
    session_id = entry["session_id"]
    wait_for(lambda: len(stored_events(session_id=session_id)) >= 151)
    auth = {"HTTP_AUTHORIZATION": f"Token {token}"}
    readers = {
        "stored": stored_events(session_id=session_id),
        "api timeline": client.get(
            f"/api/sites/{site.id}/sessions/{session_id}/events", **auth
        ).json()["events"],
        "api activity": client.get(
            f"/api/sites/{site.id}/users/{entry['user_key']}/activity", {"limit": 500}, **auth
        ).json()["events"],
    }
    for reader, events in readers.items():
        assert len(events) == 151, reader
        assert events[0]["type"] == "pageview" and path(events[0]["url"]) == "/demo/"
        triples = list(zip(events[1::3], events[2::3], events[3::3], strict=True))
        for n, (click, leave, view) in enumerate(triples):
            kinds = (click["type"], leave["type"], leave["name"], view["type"])
            assert kinds == ("click", "custom", "$pageleave", "pageview"), (reader, n)
            assert path(view["url"]) == target(click["element"]), (reader, n)
            assert path(leave["url"]) == path(click["url"]), (reader, n)  # the page it left
        if clock == "stopped":
            assert len({e["ts"] for e in events}) == 1, reader  # one millisecond
    # What the tracker sent, in the order it recorded it: its microsecond times alone
    # give that order, also within one millisecond.
    assert len(sent) == 151
    times = [e["ts"] for e in sent]
    assert times == sorted(times) and len(set(times)) == 151
    if clock == "stopped":
        assert len({t[:23] for t in times}) == 1
