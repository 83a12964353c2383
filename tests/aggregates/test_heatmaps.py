"""Heatmap aggregates against a recount of the raw rows.

Visitors go through /collect over the last ~30 hours in three layouts: page views, clicks
with positions (some rage, some dead, some without a position, as server-side SDKs send
them), `$pageleave` readings (several for one page view, some an hour later than the
others) and a bot; the hours seal, late visits reopen sealed hours and they reseal. The
recount reads every hour's raw rows (site_events_by_bucket) and counts them afresh:
grid cells, element clicks with their flags and box cells, each page view's deepest
reading per hour with its fold.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import datetime, timedelta
from html import escape, unescape
from typing import Any
from urllib.parse import parse_qsl

import pytest
from django.contrib.auth.models import User
from django.core import signing
from django.test import Client
from django.utils import timezone

from sessions_app.domain.aggregates import heatmap_rows, seal, sources
from sessions_app.domain.aggregates.heatmaps import (
    SAMPLES,
    UNKNOWN,
)
from sessions_app.domain.ledger import policies, sites
from sessions_app.features.heatmaps import reads
from sessions_app.foundation.core import stamps, timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.models import BucketState
from sessions_app.foundation.tables import retention_specs
from tests.support.accounts import member
from tests.support.clock import recent_fixed
from tests.support.dataset import AGENTS
from tests.support.events import event, post
from tests.support.heatmaps import newest, plain, recount, visit
from tests.support.paths import send
from tests.support.sealing import seal_everything
from tests.support.shared import Span, World, built_once, restored, shop_site

BOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


# One worker builds the visits once; the tests that write have a site of their own.
pytestmark = pytest.mark.xdist_group("heatmaps")


@pytest.fixture(scope="module")
def built(django_db_setup, django_db_blocker) -> Iterator[World[Span]]:
    """The visits the tests asking for them read, built once (tests/support/shared.py)."""
    yield from built_once(django_db_blocker, _visits)


@pytest.fixture
def site(built, db):
    """The visits' site (the tests that write make a site of their own)."""
    return restored(built).site


@pytest.fixture
def visits(built, site) -> tuple[datetime, datetime]:
    return built.value.start, built.value.end


def _visits() -> Span:
    client = Client()
    site = shop_site()
    rng = random.Random(28)
    # Yesterday 08:09, whatever the hour of the run: the 32 hours before it hold a whole
    # day, and every hour a visit reaches (up to ~2 h past it) is due for sealing now.
    now = recent_fixed(days_ago=1, at=timedelta(hours=8, minutes=9, seconds=26))
    for i in range(40):
        start = now - timedelta(minutes=rng.randrange(90, 30 * 60))
        send(client, site, visit(rng, f"v{i}", start), AGENTS[i % 5])
    send(client, site, visit(rng, "bot", now - timedelta(hours=3)), BOT)
    seal_everything(site, timezone.now())
    for i in range(5):  # late visits: their sealed hours reopen and reseal
        send(
            client,
            site,
            visit(rng, f"late{i}", now - timedelta(hours=rng.randrange(3, 20))),
            AGENTS[0],
        )
    assert BucketState.objects.filter(site=site, state="reopened").exists()
    seal_everything(site, timezone.now())
    start = timebuckets.floor(now - timedelta(hours=32), "hour")
    return Span(site, start, timebuckets.floor(now, "hour"))


def test_every_sealed_hour_and_day_equals_a_recount_of_its_raw_rows(site, visits):
    start, end = visits
    by_day: dict[datetime, list[dict[str, Any]]] = defaultdict(list)
    checked = Counter()
    said: set[str] = set()
    for hour in timebuckets.buckets_between(start, end, "hour"):
        rows = list(sources.site_bucket_rows(site_id=site.id, hour=hour, shards=4))
        by_day[timebuckets.floor(hour, "day")].extend(rows)
        (stored,) = heatmap_rows.buckets_read(site_id=site.id, buckets=[("hour", hour)])
        assert {k: plain(v) for k, v in stored.items()} == recount(rows), hour
        for (_, vp), heat in stored.items():
            checked[vp] += heat.clicks
            checked["rage"] += sum(c[1] for c in heat.elements.values())
            checked["dead"] += sum(c[2] for c in heat.elements.values())
            checked["readings"] += heat.scroll.total()
            said.update(heat.texts.values())
    assert {"<640", "640-1024", ">1024", UNKNOWN, "rage", "dead", "readings"} <= {
        k for k, n in checked.items() if n
    }
    assert {"Buy now", "Read more", ""} <= said  # what elements said, "" when it varied
    whole = [d for d in by_day if d >= start and timebuckets.next_start(d, "day") <= end]
    for day in whole:
        (stored,) = heatmap_rows.buckets_read(site_id=site.id, buckets=[("day", day)])
        hours = [
            recount(list(sources.site_bucket_rows(site_id=site.id, hour=h, shards=4)))
            for h in timebuckets.buckets_between(day, timebuckets.next_start(day, "day"), "hour")
        ]
        summed: dict[tuple[str, str], dict[str, Any]] = {}
        for counted in hours:
            for key, heat in counted.items():
                empty = {
                    "clicks": 0,
                    "cells": {},
                    "elements": {},
                    "spots": {},
                    "scroll": {},
                    "folds": {},
                    "samples": {},
                    "texts": {},
                }
                into = summed.setdefault(key, plain(empty))
                into["clicks"] += heat["clicks"]
                for name in ("cells", "scroll", "folds"):
                    into[name] = dict(Counter(into[name]) + Counter(heat[name]))
                for label, c in heat["elements"].items():
                    into["elements"][label] = [
                        a + b
                        for a, b in zip(into["elements"].get(label, [0, 0, 0]), c, strict=True)
                    ]
                for label, c in heat["spots"].items():
                    into["spots"][label] = dict(Counter(into["spots"].get(label, {})) + Counter(c))
                for label, found in heat["samples"].items():
                    into["samples"][label] = newest(into["samples"].get(label, []) + found)
                for label, text in heat["texts"].items():  # one text, or "": they differ
                    held = into["texts"].get(label, text)
                    into["texts"][label] = text if held == text else ""
        assert {k: plain(v) for k, v in stored.items()} == summed, day


def test_a_bad_position_or_flag_is_rejected_naming_its_field(client, db):
    site = shop_site()  # it writes
    now = timezone.now()
    cases = [
        ({"kind": "click", "pos": {"x": 1.5, "y": 10}}, "pos.x"),
        ({"kind": "click", "pos": {"x": 0.5}}, "pos.y"),
        ({"kind": "click", "pos": {"x": 0.5, "y": -1}}, "pos.y"),
        ({"kind": "click", "pos": {"x": 0.5, "y": 1, "ex": "a"}}, "pos.ex"),
        ({"kind": "click", "pos": [1, 2]}, "pos"),
        ({"kind": "click", "rage": "yes"}, "rage"),
        ({"kind": "pageview", "dead": True}, "dead"),
        ({"kind": "pageview", "pos": {"x": 0.5, "y": 1}}, "pos"),
    ]
    events = []
    for i, (fields, _) in enumerate(cases):
        extra = dict(fields)
        kind = extra.pop("kind")
        if kind == "click":
            extra["element"] = {"tag": "p"}
        events.append(event(now - timedelta(seconds=i), kind=kind, anon=f"bad{i}", **extra))
    good = event(
        now,
        kind="click",
        anon="good",
        element={"tag": "p"},
        viewport=800,
        pos={"x": 0.25, "y": 300, "ex": 0.5, "ey": 0.5},
        rage=True,
        dead=True,
    )
    response = post(client, site, [*events, good], REMOTE_ADDR="8.8.8.8")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["accepted"] == 1
    reasons = {r["index"]: r["reason"] for r in body["rejected"]}
    for i, (_, field) in enumerate(cases):
        assert reasons[i].startswith(f"events[{i}].{field}:"), (i, reasons[i])


# ---- the overlay's read and its token ------------------------------------------------

OVERLAY = "/api/heatmap"


def overlay_get(
    client, token: str | None, *, origin: str | None = "https://shop.example", **params: str
):
    headers = {"HTTP_ORIGIN": origin} if origin else {}
    if token is not None:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    query = {"page": "/pricing", "vp": ">1024", "days": "7", **params}
    return client.get(OVERLAY, query, **headers)


def _token(site, page: str = "/pricing") -> str:
    return reads.token_for(site_id=site.id, salt=site.heatmap_salt, page=page)


def test_the_overlay_reads_one_pages_heatmap_with_its_token(client, site, visits):
    token = _token(site)
    response = overlay_get(client, token)
    assert response.status_code == 200, response.content
    assert response["Access-Control-Allow-Origin"] == "https://shop.example"
    body = response.json()
    start, end = (datetime.fromisoformat(body[k].replace("Z", "+00:00")) for k in ("start", "end"))
    rows = [
        r
        for h in timebuckets.buckets_between(start, end, "hour")
        for r in sources.site_bucket_rows(site_id=site.id, hour=h, shards=4)
    ]
    want = recount(rows).get(("/pricing", ">1024"))
    # Scroll: each page view once per hour it sent readings in (its deepest there).
    hourly = Counter()
    for h in timebuckets.buckets_between(start, end, "hour"):
        one = recount(list(sources.site_bucket_rows(site_id=site.id, hour=h, shards=4)))
        hourly.update(one.get(("/pricing", ">1024"), {}).get("scroll", {}))
    assert want and body["clicks"] == want["clicks"]
    assert {c: n for c, n in body["grid"]["cells"]} == want["cells"]
    assert {e["selector"]: [e["clicks"], e["rage"], e["dead"]] for e in body["elements"]} == (
        want["elements"]
    )
    views = hourly.total()
    assert views > sum(want["scroll"].values())  # some page views sent readings in two hours
    assert body["scroll"]["views"] == views
    for percent, share in body["scroll"]["reach"]:
        deeper = sum(n for p, n in hourly.items() if p >= percent)
        assert share == round(deeper / views, 4), percent
    assert set(body["layouts"]) == {"<640", "640-1024", ">1024"}
    # Page aggregates only: nothing of who clicked reaches the overlay.
    assert not any(str(r["session_id"]) in response.content.decode() for r in rows)
    assert not any(f'"{r["user_key"]}"' in response.content.decode() for r in rows)


def test_the_overlay_token_is_checked_and_reads_nothing_else(client, site, visits, monkeypatch):
    token = _token(site)
    assert overlay_get(client, None).status_code == 401
    tampered = overlay_get(client, token[:-2] + ("aa" if not token.endswith("aa") else "bb"))
    assert tampered.status_code == 401 and tampered.json()["error"].startswith("token:")
    # An origin the site does not allow gets nothing, not even the CORS header.
    other = overlay_get(client, token, origin="https://evil.example")
    assert other.status_code == 403 and "Access-Control-Allow-Origin" not in other
    assert other.json()["error"].startswith("origin:")
    # A bad parameter is named.
    for field, value in (("vp", "huge"), ("days", "400"), ("page", "pricing")):
        sent = _token(site, "pricing") if field == "page" else token
        bad = overlay_get(client, sent, **{field: value})
        assert bad.status_code == 400 and bad.json()["error"].startswith(f"{field}:"), field
    # The token is not an API token: no other route takes it.
    for url in (f"/api/sites/{site.id}/report", f"/api/sites/{site.id}/sessions"):
        assert client.get(url, HTTP_AUTHORIZATION=f"Bearer {token}").status_code in (401, 403)
        assert client.get(url, HTTP_AUTHORIZATION=f"Token {token}").status_code in (401, 403)
    # A token made for another site reads that site only (the site is in the token).
    elsewhere = sites.site_create(name="Other", origins=["https://other.example"])
    foreign = overlay_get(client, _token(elsewhere))
    assert foreign.status_code == 403  # shop.example is not the other site's origin
    # A preflight is answered for an allowed origin only.
    ok = client.options(OVERLAY, HTTP_ORIGIN="https://shop.example")
    assert ok.status_code == 204 and ok["Access-Control-Allow-Headers"] == "Authorization"
    assert client.options(OVERLAY, HTTP_ORIGIN="https://evil.example").status_code == 403
    # After an hour the token is refused.
    later = time.time() + reads.TOKEN_AGE.total_seconds() + 5
    monkeypatch.setattr(signing.time, "time", lambda: later)
    expired = overlay_get(client, token)
    assert expired.status_code == 401 and "expired" in expired.json()["error"]


def test_the_heatmaps_page_shows_frustration_scroll_and_view_on_page(client, analyst, site, visits):
    response = client.get(f"/sites/{site.id}/heatmaps/", {"page": "/pricing", "vp": ">1024"})
    assert response.status_code == 200
    html = response.content.decode()
    body = overlay_get(client, _token(site), days="30").json()
    assert f'<strong id="clicks">{body["clicks"]}</strong>' in html
    link = re.search(r'id="view-on-page" href="([^"]+)"', html).group(1)
    assert link.startswith("https://shop.example/pricing#cs-heatmap=")
    token = _fragment(html)["cs-heatmap"]
    assert reads.site_of_token(token) == site.id
    reads.token_check(token, site_id=site.id, salt=site.heatmap_salt, page="/pricing")
    assert re.fullmatch(r"[A-Za-z0-9._-]+", token)  # what the tracker takes from a fragment
    worst = max(body["elements"], key=lambda e: e["rage"] + e["dead"])
    frustrated = html.split('id="frustrated"', 1)[1]
    # Its latest rage and dead clicks, each opening its session's timeline at the click.
    row = re.search(rf'title="{re.escape(escape(worst["selector"]))}">.*?</tr>', frustrated, re.S)
    row = row.group(0)
    links = re.findall(r'class="sample" href="/sites/[^/]+/sessions/([^/]+)/#event-([^"]+)"', row)
    assert 0 < len(links) <= SAMPLES
    for session_id, event_id in links:
        timeline = client.get(f"/sites/{site.id}/sessions/{session_id}/").content.decode()
        assert f'id="event-{event_id}"' in timeline
    assert '<svg class="trend"' in row
    assert client.get(f"/sites/{site.id}/heatmaps/", {"page": "x"}).status_code == 400


def _fragment(html: str) -> dict[str, str]:
    link = re.search(r'id="view-on-page" href="([^"]+)"', html).group(1)
    return dict(parse_qsl(unescape(link).split("#", 1)[1]))


def test_view_on_page_hands_the_overlay_the_pages_range(client, analyst, site, visits):
    """The overlay opens on the range chosen on the Heatmaps page: the same clicks."""
    seen = {}
    for period in ("yesterday", "7d"):
        query = {"page": "/pricing", "vp": ">1024", "period": period}
        html = client.get(f"/sites/{site.id}/heatmaps/", query).content.decode()
        fragment = _fragment(html)
        assert fragment["cs-period"] == period
        passed = {k.removeprefix("cs-"): v for k, v in fragment.items() if k != "cs-heatmap"}
        body = overlay_get(client, fragment["cs-heatmap"], days="", **passed).json()
        assert f'<strong id="clicks">{body["clicks"]}</strong>' in html
        seen[period] = body
    assert seen["yesterday"]["range"]["label"] == "Yesterday"
    assert seen["7d"]["range"]["label"] == "Last 7 days"
    assert seen["yesterday"]["clicks"] < seen["7d"]["clicks"]  # the range is not ignored
    # A custom range goes as its days; one longer than the cap is cut as the page cuts it.
    query = {"page": "/pricing", "period": "custom", "from": "2026-01-01", "to": "2026-01-31"}
    fragment = _fragment(client.get(f"/sites/{site.id}/heatmaps/", query).content.decode())
    assert (fragment["cs-from"], fragment["cs-to"]) == ("2026-01-01", "2026-01-31")
    capped = overlay_get(client, _token(site), days="", period="12mo").json()
    start, end = (
        datetime.fromisoformat(capped[k].replace("Z", "+00:00")) for k in ("start", "end")
    )
    assert end - start == timedelta(days=92)
    assert capped["range"]["note"].startswith("Heatmaps cover at most 92 days")
    bad = overlay_get(client, _token(site), days="", period="fortnight")
    assert bad.status_code == 400 and bad.json()["error"].startswith("period:")
    # Another site's analyst still gets a 404 for the page.
    stranger = User.objects.create_user("stranger", password="pw-str-123")
    client.force_login(member(stranger, shop_site()))
    assert client.get(f"/sites/{site.id}/heatmaps/", {"page": "/pricing"}).status_code == 404


def test_top_clicks_name_elements_by_their_text_and_filter_the_page(client, analyst, site, visits):
    query = {"page": "/pricing", "vp": ">1024", "period": "30d"}
    html = client.get(f"/sites/{site.id}/heatmaps/", query).content.decode()
    body = overlay_get(client, _token(site), days="", period="30d").json()
    table = re.search(r'<table id="top-clicks".*?</table>', html, re.S).group(0)
    rows = re.findall(r'<tr class="linked[^"]*">(.*?)</tr>', table, re.S)
    assert len(rows) == min(len(body["elements"]), 10) > 0
    total = sum(e["clicks"] for e in body["elements"])
    for row, element in zip(rows, body["elements"], strict=False):  # most clicked first
        texts = {"button#buy": "Buy now", "a.more": "Read more"}
        if element["selector"] in texts:  # its text, not its selector
            assert f'<span class="said">{texts[element["selector"]]}</span>' in row
            assert "<code" not in row
        else:  # said nothing, or different things: the selector, smaller
            assert f'<code class="selector">{escape(element["selector"])}</code>' in row
        assert f'<td class="num">{element["clicks"]}</td>' in row
        assert f"{round(100 * element['clicks'] / total, 1)}%" in row
        href = unescape(re.search(r'class="filter-link" href="([^"]+)"', row).group(1))
        assert dict(parse_qsl(href.removeprefix("?"))) == {**query, "element": element["selector"]}
    # The link filters the page by the element: a chip, its row alone, its frustration.
    card = next(e for e in body["elements"] if e["selector"] == "div.card > span")
    filtered = client.get(f"/sites/{site.id}/heatmaps/", {**query, "element": card["selector"]})
    assert filtered.status_code == 200
    page = filtered.content.decode()
    chip = re.search(r'<li class="chip" data-filter="element">.*?</li>', page, re.S).group(0)
    assert "div.card &gt; span" in chip
    removed = unescape(re.search(r'class="chip-remove" href="([^"]+)"', chip).group(1))
    assert dict(parse_qsl(removed.removeprefix("?"))) == query
    table = re.search(r'<table id="top-clicks".*?</table>', page, re.S).group(0)
    assert table.count('class="filter-link"') == 1 and 'aria-current="true"' in table
    frustrated = re.search(r'<table id="frustrated".*?</table>', page, re.S)
    if card["rage"] or card["dead"]:
        assert frustrated.group(0).count('class="element"') == 1
    assert f'<strong id="clicks">{body["clicks"]}</strong>' in page  # the page's total stays
    # The range picker keeps the filter.
    assert '<input type="hidden" name="element" value="div.card &gt; span">' in page


def test_the_timeline_marks_rage_and_dead_clicks(client, analyst, site, visits):
    start, end = visits
    rows = [
        r
        for h in timebuckets.buckets_between(start, end, "hour")
        for r in sources.site_bucket_rows(site_id=site.id, hour=h, shards=4)
    ]
    flagged = [
        r
        for r in rows
        if r["type"] == "click"
        and r["layout"]
        and '"rage":true' in r["layout"]
        and '"dead":true' not in r["layout"]
    ]
    plain_click = next(
        r
        for r in rows
        if r["type"] == "click"
        and r["layout"]
        and "rage" not in r["layout"]
        and "dead" not in r["layout"]
    )
    row = flagged[0]
    html = client.get(f"/sites/{site.id}/sessions/{row['session_id']}/").content.decode()
    marked = re.search(rf'id="event-{row["event_id"]}".*?</tr>', html, re.S).group(0)
    assert 'class="tag warn rage"' in marked and 'class="tag dead"' not in marked
    html = client.get(f"/sites/{site.id}/sessions/{plain_click['session_id']}/").content.decode()
    unmarked = re.search(rf'id="event-{plain_click["event_id"]}".*?</tr>', html, re.S)
    assert unmarked and "rage" not in unmarked.group(0) and "dead" not in unmarked.group(0)


def test_who_clicked_in_rage_ends_with_the_raw_rows(client, db):
    """A row's latest rage and dead clicks name their event, session and user: their TTL
    ends them no later than the raw rows of the oldest (its time - MAX_AHEAD + the shorter
    of the raw events' and sessions' policies); the counts keep the aggregates' TTL."""
    site = shop_site()  # it writes
    hour = timebuckets.floor(timezone.now() - timedelta(hours=3), "hour")
    at = hour + timedelta(minutes=10)
    element = {"tag": "button", "selector": "button#buy"}
    send(
        client,
        site,
        [
            event(at, anon="r1"),
            event(
                at + timedelta(seconds=5),
                kind="click",
                anon="r1",
                element=element,
                pos={"x": 0.5, "y": 10},
                rage=True,
            ),
        ],
        AGENTS[0],
    )
    assert seal.bucket_seal(site_id=site.id, hour=hour, now=timezone.now())
    read = prepare(
        "SELECT samples, TTL(samples) AS left, TTL(counts) AS kept FROM {ks}.bucket_heatmaps"
        " WHERE site_id = ? AND granularity = 'hour' AND bucket = ?"
    )
    row = cassandra_session().execute(read, (site.id, hour)).one()
    assert "r1" in row["samples"]
    keep = min(
        policies.ttl_seconds(retention_specs.RAW_EVENTS),
        policies.ttl_seconds(retention_specs.SESSIONS),
    )
    ends = at + timedelta(seconds=5) - stamps.MAX_AHEAD + timedelta(seconds=keep)
    assert 0 <= (ends - timezone.now()).total_seconds() - row["left"] < 120
    assert row["kept"] > row["left"] + 86_400
    (heat,) = heatmap_rows.buckets_read(site_id=site.id, buckets=[("hour", hour)])
    assert [s[3] for s in heat[("/", UNKNOWN)].samples["button#buy"]] == ["r1"]
