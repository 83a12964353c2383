"""What the recorder never sends, in headless Chromium with the real replay.min.js
(docs/replay.md, "What never is"): text typed into a contenteditable element, a hidden
input's value, an emptied field's HTML value, the attributes of a [data-cs-mask]
element's subtree (title, alt, a mailto: href, data-*), also set later, and a masked
select's choice (not even its length: a constant mask). Checked in every request the
recorder made and in the chunks stored in Cassandra. And the recorder causes no CSP
violation on the demo shop, whose policy has no 'unsafe-inline' (rrweb parsed a changed
style attribute's old value by setAttribute: scripts/build-tracker.mjs patchRecord)."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from sessions_app.domain.ledger import sites
from sessions_app.domain.sessions import feed
from sessions_app.foundation.core.cql import cassandra_session, prepare
from tests.support.browser import CHUNK_MS, Chunks, wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
    pytest.mark.usefixtures("demo_any_site"),  # /demo/?site=KEY
]

CHUNKS = "SELECT data FROM {ks}.replay_chunks WHERE site_id = ? AND session_id = ?"
TYPED = "Dear Zorblax, my PIN is 2718"
CSRF = "csrf-Qv7TnS3kWpX9"
PREFILLED = "quentin.marsh@example.net"  # the field's HTML value, emptied by the visitor
SECRETS = {
    "title": "Title Wilhelmina Fernsby",
    "alt": "Alt Portrait of Fernsby",
    "href": "mailto:wilhelmina.fernsby@example.org",
    "data-account": "ACCT-55501234",
}
LATER = {
    "title": "Later Ottoline Brackwater",
    "alt": "Later Alt Brackwater",
    "href": "mailto:ottoline.brackwater@example.org",
    "data-account": "ACCT-77708888",
}
CITY = "Vladivostok"  # the option chosen: the masked value may not tell it by its length
CORNER = (
    '<section id="privacy">'
    '<div id="note" contenteditable="true">Write here: </div>'
    f'<input type="hidden" name="csrfmiddlewaretoken" value="{CSRF}">'
    f'<input id="email" type="email" value="{PREFILLED}">'
    '<div id="profile" data-cs-mask ' + " ".join(f'{k}="{v}"' for k, v in SECRETS.items()) + ">"
    f'<a id="mail" href="{SECRETS["href"]}" title="{SECRETS["title"]}">Write to us</a>'
    f'<img id="photo" alt="{SECRETS["alt"]}" data-account="{SECRETS["data-account"]}"'
    ' width="10" height="10" src="/static/sessions_app/favicon.svg"></div>'
    '<select id="city"><option value="">Choose</option><option>Rome</option>'
    f"<option>{CITY}</option></select>"
    "</section>"
)
SET_LATER = """([title, alt, href, account]) => {
    const profile = document.getElementById("profile");
    profile.setAttribute("title", title);
    profile.setAttribute("data-account", account);
    document.getElementById("photo").setAttribute("alt", alt);
    document.getElementById("mail").setAttribute("href", href);
    const added = document.createElement("a");  // a new element inside: its attributes
    added.setAttribute("title", title);
    added.setAttribute("href", href);
    profile.appendChild(added);
}"""
EMPTIED = """document.addEventListener("DOMContentLoaded", () => {
    const field = document.getElementById("email");
    if (field) field.value = "";  // before the recorder loads
});"""
RESTYLE = """() => {
    const h = document.querySelector("h1");
    h.style.cssText = "color: rgb(1, 2, 3); margin-top: 3px";  // the CSSOM: no CSP applies
    return new Promise((done) => setTimeout(() => {
        h.style.removeProperty("margin-top");
        h.style.color = "rgb(4, 5, 6)";
        done();
    }, 100));
}"""
VIOLATIONS = """window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => window.__violations.push(
    [e.violatedDirective, e.sourceFile, e.lineNumber, e.columnNumber].join(" ")), true);"""


def _site(live_server, name: str):
    site = sites.site_create(name=name, origins=[live_server.url])
    site.replay, site.replay_sample = True, 100
    site.save(update_fields=["replay", "replay_sample"])
    return site


def _stored(site, chunks: int) -> str:
    """The text of the site's one session's stored chunks (inflated), once all are."""
    sessions = feed.feed_latest(site_id=site.id, limit=5)
    if len(sessions) != 1:
        return ""
    rows = list(cassandra_session().execute(prepare(CHUNKS), (site.id, sessions[0]["session_id"])))
    return "".join(gzip.decompress(r["data"]).decode() for r in rows) if len(rows) == chunks else ""


def _sent(page) -> list[dict[str, Any]]:
    """The body of every chunk the recorder posts, inflated, as it left the page."""
    bodies: list[dict[str, Any]] = []

    def chunk(request: Any) -> None:
        if request.method == "POST" and "/replay?" in request.url:
            raw = request.post_data_buffer
            bodies.append(json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw))

    page.on("request", chunk)
    return bodies


def test_typed_hidden_and_masked_attributes_never_leave_the_page(live_server, context):
    site = _site(live_server, "E2E replay privacy")

    def with_privacy_corner(route: Any) -> None:
        response = route.fetch()
        body = response.text().replace("<main>", "<main>" + CORNER, 1)
        route.fulfill(response=response, body=body)

    context.add_init_script(EMPTIED)
    page = context.new_page()
    page.route(f"{live_server.url}/demo/**", with_privacy_corner)
    bodies, chunks = _sent(page), Chunks(page)
    page.goto(f"{live_server.url}/demo/?site={site.key}&flush=1000&chunk={CHUNK_MS}")
    page.wait_for_function("() => !!(window.clickstream && window.clickstream.last)")
    page.click("#note")
    page.keyboard.press("End")
    page.keyboard.type(TYPED, delay=5)
    page.evaluate(SET_LATER, list(LATER.values()))
    page.select_option("#city", CITY)
    chunks.all_stored()  # an interval's chunk: all of the above went out with it
    page.goto("about:blank")  # hidden: the rest goes out
    page.close()

    sent = json.dumps(bodies)
    assert "Coffee gear" in sent and '"id": "city"' in sent  # the page is recorded
    text = wait_for(lambda: _stored(site, len({b["chunk"] for b in bodies})), timeout=30)
    secrets = [TYPED, "Zorblax", "2718", CSRF, PREFILLED, *SECRETS.values(), *LATER.values()]
    secrets += ["Fernsby", "Brackwater", "ACCT-", "mailto:"]
    assert [s for s in secrets if s in sent] == []  # as the recorder sent it
    assert [s for s in secrets if s in text] == []  # as Cassandra holds it
    # A chunk refused with 409 (its session not yet applied) is sent again: once each.
    events = [e for body in {b["chunk"]: b for b in bodies}.values() for e in body["events"]]
    typed = [e for e in events if e["type"] == 3 and e["data"]["source"] == 0]
    assert any("*" in t["value"] for m in typed for t in m["data"]["texts"])  # masked, not lost
    [city] = [n["id"] for n in _elements(events) if n["attributes"].get("id") == "city"]
    chosen = [
        e["data"]["text"]
        for e in events
        if e["type"] == 3 and e["data"]["source"] == 5 and e["data"]["id"] == city
    ]
    assert chosen and set(chosen) == {"********"}  # a constant mask: not the option's length


def _elements(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every element node of the full snapshots."""
    found, stack = [], [e["data"]["node"] for e in events if e["type"] == 2]
    while stack:
        node = stack.pop()
        if node["type"] == 2:
            found.append(node)
        stack.extend(node.get("childNodes", []))
    return found


def test_the_recorder_causes_no_csp_violation_on_the_demo_shop(live_server, context):
    site = _site(live_server, "E2E replay CSP")
    context.add_init_script(VIOLATIONS)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    bodies, chunks = _sent(page), Chunks(page)
    response = page.goto(f"{live_server.url}/demo/?site={site.key}&flush=1000&chunk={CHUNK_MS}")
    assert response and "style-src 'self';" in response.headers["content-security-policy"]
    page.wait_for_function("() => !!(window.clickstream && window.clickstream.last)")
    page.click("#shop-now")
    page.locator("[data-view='/demo/products'] .add-to-cart").first.click()
    page.evaluate(RESTYLE)  # the shop's scripts restyle an element, twice
    page.click("#nav-cart")
    chunks.all_stored()  # the recorder has serialized the restyled page
    assert page.evaluate("() => window.__violations") == []
    # The browser logs every 4xx; a 409 from /replay is the collector's "retry" (the
    # chunk's session not yet applied), which the recorder does.
    assert [e for e in errors if "status of 409 (Conflict)" not in e] == []
    page.goto("about:blank")
    page.close()
    changes = [
        a["attributes"].get("style")
        for body in bodies
        for e in body["events"]
        if e["type"] == 3 and e["data"]["source"] == 0
        for a in e["data"]["attributes"]
    ]
    assert "color: rgb(4, 5, 6);" in changes, changes  # the restyle is recorded
