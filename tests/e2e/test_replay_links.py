"""Replays where they help, in headless Chromium: the explorer's "has
replay" filter, a rage click sample's ▶ replay and a funnel drop-off's open the timeline
with the player paused just before that moment (read from the player's own clock).
Screenshots at 1366x900 and 390x844 in artifacts/."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from sessions_app.domain.ledger import sites
from sessions_app.features.funnels import defs
from tests.support.accounts import member
from tests.support.browser import screenshot, wait_for
from tests.support.events import ORIGIN, event, post
from tests.support.replays import send

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True, databases=["default", "cassandra"]),
]

CLICK_AT = 20  # seconds into the recording: the rage click
SIZES = ((1366, 900), (390, 844))


def _ms(ts: datetime) -> int:
    return round(ts.timestamp() * 1000)


def _element(tag: str, node_id: int, children: list[Any], **attributes: str) -> dict[str, Any]:
    return {
        "type": 2,
        "tagName": tag,
        "attributes": attributes,
        "childNodes": children,
        "id": node_id,
    }


def recording(site, anon: str, start: datetime, seconds: int) -> dict[str, Any]:
    """A recorder chunk as rrweb writes one: the page's meta and snapshot (a shop page with
    a Buy button), then a mouse move a second for `seconds`."""
    text = {"type": 3, "textContent": "Coffee gear", "id": 6}
    button = _element("button", 7, [{"type": 3, "textContent": "Buy", "id": 8}], id="buy")
    body = _element("body", 5, [_element("h1", 9, [text]), button])
    html = _element("html", 3, [_element("head", 4, []), body])
    t0 = _ms(start)
    events = [
        {"type": 4, "data": {"href": f"{ORIGIN}/", "width": 1000, "height": 600}, "timestamp": t0},
        {
            "type": 2,
            "timestamp": t0,
            "data": {
                "initialOffset": {"left": 0, "top": 0},
                "node": {"type": 0, "childNodes": [html], "id": 1},
            },
        },
    ]
    for s in range(1, seconds + 1):
        move = {"source": 1, "positions": [{"x": 10 * s, "y": 40, "id": 7, "timeOffset": 0}]}
        events.append({"type": 3, "data": move, "timestamp": t0 + 1000 * s})
    return {
        "site": site.key,
        "chunk": "7c1d3a6e-3a5b-4c47-9a53-6d1c2f0e8b11",
        "seq": 0,
        "page": t0,
        "start": t0,
        "end": events[-1]["timestamp"],
        "anonymous_id": anon,
        "events": events,
    }


@pytest.fixture
def recorded(live_server):
    """A site with replay on: a visitor who rage-clicked Buy 20 s into a recorded page view
    and left (a funnel drop-off), and one whose dead click was not recorded."""
    site = sites.site_create(name="E2E replay links", origins=[ORIGIN])
    site.replay = True
    site.save(update_fields=["replay"])
    client = Client()
    start = timezone.now().replace(microsecond=0) - timedelta(minutes=5)
    for anon, flag in (("ana", "rage"), ("ben", "dead")):
        click = event(
            start + timedelta(seconds=CLICK_AT),
            kind="click",
            anon=anon,
            viewport=1440,
            element={"tag": "button", "selector": "button#buy", "text": "Buy"},
            pos={"x": 0.2, "y": 60},
            **{flag: True},
        )
        response = post(client, site, [event(start, anon=anon, viewport=1440), click])
        assert response.status_code == 200 and response.json()["accepted"] == 2
    answer = send(client, site, recording(site, "ana", start, 40))
    assert answer.status_code == 200, answer.content
    steps = [{"kind": "click", "selector": "button#buy"}, {"kind": "event", "name": "checkout"}]
    funnel = defs.funnel_create(site=site, name="Buy to checkout", definition={"steps": steps})
    return site, funnel


def _viewer(context, live_server, site) -> tuple[Any, list[str]]:
    member(User.objects.create_user("rhea", password="correct-horse-1"), site)
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "rhea")
    page.fill("input[name=password]", "correct-horse-1")
    page.click("button[type=submit]")
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page, errors


def _player_seconds(page) -> int | None:
    """The player's current time (its own clock, mm:ss) once it shows the recording."""
    clock = page.frame_locator("#replay iframe.replay-frame").locator(".rr-timeline__time").first
    if not clock.count():
        return None
    minutes, _, seconds = clock.inner_text().strip().partition(":")
    return int(minutes) * 60 + int(seconds)


def _paused_before_the_click(page) -> int:
    page.wait_for_selector("#replay.ready", timeout=15_000)  # the player's frame says so
    at = wait_for(lambda: (_player_seconds(page) or 0) >= CLICK_AT - 3 and _player_seconds(page))
    assert CLICK_AT - 3 <= at <= CLICK_AT, at  # 2 s before the click: what led to it
    status = page.frame_locator("#replay iframe.replay-frame").locator(".replay-status")
    status = status.inner_text()
    assert "Paused 2 s before the moment you followed" in status
    return at


def _in_reach(page, link, width: int) -> None:
    """The link is inside the viewport's width and its table frame does not scroll
    sideways (a phone shows each row as a card: tables with the cards class)."""
    box = link.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, box
    frame = link.locator("xpath=ancestor::div[contains(@class, 'table-frame')]")
    assert frame.evaluate("f => f.scrollWidth <= f.clientWidth"), "the table scrolls sideways"


def test_the_filter_and_the_links_open_the_replay_at_the_moment(
    live_server, context, recorded, settings
):
    settings.FUNNEL_INLINE_DAYS = 100
    site, funnel = recorded
    page, errors = _viewer(context, live_server, site)
    base = f"{live_server.url}/sites/{site.id}"
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{base}/sessions/?period=24h")
        assert page.locator("table.explorer tbody tr").count() == 2
        page.select_option("select[name=replay]", "true")
        page.click("#explorer-filter button[type=submit]")
        page.wait_for_url("**replay=true**")
        rows = page.locator("table.explorer tbody tr")
        assert rows.count() == 1 and "ana" in rows.first.inner_text()
        assert rows.first.locator("a.tag.replay").count() == 1
        screenshot(page, f"replay-explorer-filter-{width}")

        page.goto(f"{base}/heatmaps/?page=/&vp=%3E1024&period=24h")
        samples = page.locator("#frustrated tr.element").first
        assert samples.locator("a.sample").count() == 2
        assert samples.locator("a.tag.replay").count() == 1  # the unrecorded one: no link
        _in_reach(page, samples.locator("a.tag.replay"), width)
        screenshot(page, f"replay-heatmap-samples-{width}")
        samples.locator("a.tag.replay").click()
        _paused_before_the_click(page)
        screenshot(page, f"replay-seeked-{width}")

        page.goto(f"{base}/funnels/{funnel.pk}/units/?period=24h&step=1&outcome=dropped")
        units = page.locator("#funnel-units tbody tr")
        assert units.count() == 2 and units.locator("a.tag.replay").count() == 1
        _in_reach(page, units.locator("a.tag.replay"), width)
        screenshot(page, f"replay-funnel-dropped-{width}")
        units.locator("a.tag.replay").click()
        _paused_before_the_click(page)
        assert page.locator("tr.funnel-chain").count() == 1  # the drop-off's step marked
    assert errors == [], json.dumps(errors)
