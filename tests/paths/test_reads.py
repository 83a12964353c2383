"""Paths and transitions against a brute force over the raw events.

Visits go through /collect over the last ~30 hours (sessions that cross hour edges,
clicks and custom events between page views, a bot); the hours seal; then late visits
arrive for sealed hours and page views land in the middle of sessions already sealed
(out of order), and the reopened hours reseal. The brute force reads the raw rows
(site_events_by_bucket) of every hour, orders each session's page views by event id and
counts every path of up to five pages ending at each view, in the view's hour.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from sessions_app.domain.aggregates import path_grams, paths
from sessions_app.domain.aggregates.path_grams import ENTRANCE, MAX_STEPS
from sessions_app.domain.aggregates.paths import FROM, TO
from sessions_app.features.paths import reads
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import BucketState
from tests.support.dataset import AGENTS, SHOP
from tests.support.events import event
from tests.support.paths import BOT, anchored, brute, raw_rows, send
from tests.support.sealing import seal_everything
from tests.support.shared import Span, World, built_once, restored, shop_site

PAGES = ["/", "/pricing", "/cart", "/checkout", "/docs", "/blog"]
LANDINGS = [(None, None), ("https://www.google.com/", None), (None, "newsletter")]


def visit(rng: random.Random, anon: str, start: datetime) -> list[dict[str, Any]]:
    """One visitor's events: 1-8 page views 1-25 minutes apart, clicks between."""
    referrer, campaign = rng.choice(LANDINGS)
    events, ts = [], start
    for n in range(rng.randrange(1, 9)):
        path = rng.choice(PAGES)
        if n == 0 and campaign:
            path += f"?utm_source={campaign}&utm_medium=email"
        extra = {"referrer": referrer} if n == 0 and referrer else {}
        events.append(event(ts, anon=anon, url=SHOP + path, **extra))
        if rng.random() < 0.3:
            events.append(
                event(
                    ts + timedelta(seconds=5),
                    kind="click",
                    anon=anon,
                    url=SHOP + path,
                    element={"selector": "a.next"},
                )
            )
        ts += timedelta(minutes=rng.randrange(1, 26))
    return events


pytestmark = pytest.mark.xdist_group("paths-reads")  # one worker builds the visits once


@pytest.fixture(scope="module")
def built(django_db_setup, django_db_blocker) -> Iterator[World[Span]]:
    """The visits every test here reads, built once (tests/support/shared.py)."""
    yield from built_once(django_db_blocker, _visits)


@pytest.fixture
def site(built, db):
    """The visits' site (no test here writes to it)."""
    return restored(built).site


@pytest.fixture
def visits(built, site) -> tuple[datetime, datetime]:
    return built.value.start, built.value.end


def _visits() -> Span:
    client = Client()
    site = shop_site()
    rng = random.Random(11)
    now = timezone.now().replace(microsecond=0)
    sent: dict[str, list[dict[str, Any]]] = {}
    for i in range(70):
        anon = f"v{i}"
        start = now - timedelta(minutes=rng.randrange(20, 30 * 60))
        sent[anon] = visit(rng, anon, start)
        cut = rng.randrange(1, len(sent[anon]) + 1)  # one or two requests
        for part in (sent[anon][:cut], sent[anon][cut:]):
            if part:
                send(client, site, part, AGENTS[i % 5])
    send(client, site, visit(rng, "bot", now - timedelta(hours=3)), BOT)
    seal_everything(site, timezone.now())
    sealed = BucketState.objects.filter(site=site, granularity="hour", state=BucketState.SEALED)
    assert sealed.count() >= 20
    # Late: whole visits in hours sealed already, and page views in the middle of
    # sealed sessions, before page views counted in later hours.
    for i in range(8):
        anon = f"late{i}"
        send(client, site, visit(rng, anon, now - timedelta(hours=rng.randrange(5, 28))), AGENTS[0])
    inserted = 0
    for i, (anon, events) in enumerate(sent.items()):
        views = [e for e in events if e["type"] == "pageview"]
        if len(views) >= 3 and inserted < 10:
            before, after = (datetime.fromisoformat(v["ts"]) for v in views[1:3])
            middle = before + (after - before) / 2
            send(client, site, [event(middle, anon=anon, url=SHOP + "/docs")], AGENTS[i % 5])
            inserted += 1
    assert inserted == 10
    reopened = BucketState.objects.filter(site=site, granularity="hour", state=BucketState.REOPENED)
    assert reopened.exists()
    seal_everything(site, timezone.now())
    start = timebuckets.floor(now - timedelta(hours=31), "day")
    end = timebuckets.next_start(timebuckets.floor(timezone.now(), "hour"), "hour")
    return Span(site, start, end)


@pytest.mark.heavy
def test_every_sealed_hour_holds_the_paths_of_its_page_views(site, visits):
    start, end = visits
    rows = raw_rows(site, start, end)
    checked = 0
    for hour in BucketState.objects.filter(
        site=site, granularity="hour", state=BucketState.SEALED
    ).values_list("bucket", flat=True):
        hour = timebuckets.as_utc(hour)
        grams, entrances, _ = brute(rows, site, hour, timebuckets.next_start(hour, "hour"))
        stored = paths.buckets_read(site_id=site.id, buckets=[("hour", hour)])
        got: Counter = Counter()
        got_sources: Counter = Counter()
        for (side, anchor), row in (stored[0] if stored else {}).items():
            if side == FROM:
                got.update(row.grams)
            for source, n in row.sources.items():
                got_sources[anchor, source] += n
        assert got == grams, hour
        assert got_sources == entrances, hour
        checked += 1
    assert checked >= 20


def test_the_range_equals_the_brute_force_from_to_and_between_pages(site, visits):
    start, end = visits
    grams, entrances, sequences = brute(raw_rows(site, start, end), site, start, end)
    assert any(g[0] == ENTRANCE and len(g) == MAX_STEPS + 1 for g in grams)  # long visits
    query = reads.PathQuery(start, end)
    for side, anchor in [(FROM, ENTRANCE), *((s, p) for p in PAGES for s in (FROM, TO))]:
        query = reads.PathQuery(start, end, side, anchor)
        row, live = reads.range_row(site_id=site.id, query=query)
        assert row.grams == anchored(grams, side, anchor), (side, anchor)
        assert live <= 2  # the hours not settled yet
        if side == TO:
            want = {s: n for (p, s), n in entrances.items() if p == anchor}
            assert row.sources == want, anchor
    # Whole paths from the entrance: each session's first five pages.
    row, _ = reads.range_row(site_id=site.id, query=reads.PathQuery(start, end))
    top = reads.top_paths(row, side=FROM, anchor=ENTRANCE, top=10_000)
    want = Counter(tuple(pages[:MAX_STEPS]) for pages in sequences.values())
    assert {tuple(p["pages"][1:]): p["count"] for p in top} == want
    # The Sankey's first step: where sessions entered.
    flows = reads.sankey(row, side=FROM, anchor=ENTRANCE)
    first = {n["page"]: n["count"] for n in flows["nodes"] if n["step"] == 1}
    assert first == Counter(pages[0] for pages in sequences.values())


def test_transitions_of_a_page_equal_its_neighbours_in_the_raw_sessions(site, visits):
    start, end = visits
    _, entrances, sequences = brute(raw_rows(site, start, end), site, start, end)
    for page in PAGES:
        query = reads.PathQuery(start, end, FROM, page)
        from_row, _ = reads.range_row(site_id=site.id, query=query)
        to_row, _ = reads.range_row(site_id=site.id, query=query, side=TO)
        got = reads.transitions(from_row, to_row, page=page)
        views = previous = following = exits = 0
        came: Counter = Counter()
        went: Counter = Counter()
        for pages in sequences.values():
            for j, p in enumerate(pages):
                if p != page:
                    continue
                views += 1
                if j:
                    came[pages[j - 1]] += 1
                if j + 1 < len(pages):
                    went[pages[j + 1]] += 1
                else:
                    exits += 1
        previous, following = sum(came.values()), sum(went.values())
        assert got["views"] == views
        assert {c["value"]: c["count"] for c in got["previous_pages"]} == came
        assert got["entrances"] == views - previous
        assert {c["value"]: c["count"] for c in got["next_pages"]} == went
        assert got["exits"] == exits == views - following
        want = Counter({s: n for (p, s), n in entrances.items() if p == page})
        assert {c["value"]: c["count"] for c in got["entrance_sources"]} == want


def test_the_api_and_pages_show_paths_and_transitions(client, analyst, site, visits):
    start, end = visits
    params = {"start": start.isoformat(), "end": end.isoformat()}
    url = reverse("api-site-paths", args=[site.id])
    client.force_login(analyst)
    body = client.get(url, params).json()
    assert body["side"] == FROM and body["anchor"] == ENTRANCE
    assert body["nodes"] and body["links"] and body["paths"]
    body = client.get(url, {**params, "to": "/checkout"}).json()
    assert body["anchor"] == "/checkout" and body["side"] == TO
    answer = client.get(url, {**params, "from": "/", "to": "/cart"})
    assert answer.status_code == 400 and answer.json()["field"] == "to"
    answer = client.get(url, {**params, "start": "yesterday"})
    assert answer.status_code == 400 and answer.json()["field"] == "start"
    moves = client.get(reverse("api-site-transitions", args=[site.id]), {**params, "page": "/cart"})
    assert moves.status_code == 200 and moves.json()["page"] == "/cart"
    missing = client.get(reverse("api-site-transitions", args=[site.id]), params)
    assert missing.status_code == 400 and missing.json()["field"] == "page"
    page = client.get(reverse("sessions_app:paths", args=[site.id]), params)
    assert page.status_code == 200 and b"<svg" in page.content and b"/pricing" in page.content
    page = client.get(
        reverse("sessions_app:transitions", args=[site.id]), {**params, "page": "/cart"}
    )
    assert page.status_code == 200 and b"/cart" in page.content
    heat = reverse("sessions_app:heatmaps", args=[site.id])
    link = re.search(rb'id="page-heatmap" href="([^"]+)"', page.content).group(1).decode()
    assert link.startswith(f"{heat}?period=custom&amp;") and link.endswith("&amp;page=/cart")
    bad = client.get(reverse("sessions_app:paths", args=[site.id]), {**params, "end": "x"})
    assert bad.status_code == 400


def test_a_query_names_the_bad_parameter():
    now = timezone.now()
    with pytest.raises(RangeError) as error:
        reads.path_query_parse({"from": "/", "to": "/a"}, now=now)
    assert error.value.field == "to"
    with pytest.raises(RangeError) as error:
        reads.page_query_parse({}, now=now)
    assert error.value.field == "page"
    query = reads.path_query_parse({"to": "https://shop.example/cart?x=1"}, now=now)
    assert (query.side, query.anchor) == (TO, "/cart")


def test_session_count_is_every_path_up_to_five_pages_ending_at_each_view():
    counts = path_grams.PathCounts()
    path_grams.session_count(counts, [ENTRANCE], ["/a", "/b"], "google")
    assert counts.grams == Counter(
        {
            ("/a",): 1,
            (ENTRANCE, "/a"): 1,
            ("/b",): 1,
            ("/a", "/b"): 1,
            (ENTRANCE, "/a", "/b"): 1,
        }
    )
    assert counts.sources == Counter({("/a", "google"): 1})
    counts = path_grams.PathCounts()
    path_grams.session_count(counts, ["/1", "/2", "/3", "/4", "/5"], ["/6"], "x")
    assert max(len(g) for g in counts.grams) == MAX_STEPS and not counts.sources


def test_visits_counted_once_each_times_their_number_count_what_each_visit_counts():
    """The sessions begun in an hour are counted by distinct (pages, source), times how
    many visits were so: the same paths and entrances as counting every visit alone."""
    rng = random.Random(3)
    pages = ["/", "/a", "/b", "/a/c"]
    visits: Counter[tuple[tuple[str, ...], str]] = Counter()
    one_by_one = path_grams.PathCounts()
    for _ in range(400):  # few pages, short visits: most repeat
        seen = tuple(rng.choice(pages) for _ in range(rng.randint(1, 8)))
        source = rng.choice(["google", "(none)"])
        visits[seen, source] += 1
        path_grams.session_count(one_by_one, [ENTRANCE], list(seen), source)
    assert max(visits.values()) > 1 and min(visits.values()) == 1
    counted = path_grams.PathCounts()
    path_grams.visits_count(counted, visits)
    assert counted.grams == one_by_one.grams
    assert counted.sources == one_by_one.sources
