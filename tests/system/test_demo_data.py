"""The demo data lights up every report: generated visits, sent through the real collector,
come from many sources, countries and devices, convert, rage-click and scroll, and every
page they view and element they click is the demo shop's own (so heatmaps and "View on
page" show them on the shop). Over six weeks (the `weeks` world; `make run` writes 90 days
of more visitors, by the same code) weekdays are busier than weekends and the traffic
rises, visitors come back in later weeks, a share of sessions has a replay that plays the
shop, and it is all sealed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, timedelta
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest
from cassandra.concurrent import execute_concurrent_with_args
from django.conf import settings

from sessions_app.domain.goals.defs import conversion_label, site_goals
from sessions_app.domain.ledger import sites
from sessions_app.domain.system import demo
from sessions_app.features.heatmaps import reads
from sessions_app.features.replays import chunks
from sessions_app.features.system import demo_replays
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.models import BucketState
from tests.support.clock import FIXED_NOW
from tests.support.shared import World, built_once, restored

pytestmark = [pytest.mark.django_db, pytest.mark.xdist_group("demo-data")]  # built once

SESSIONS = (
    "SELECT source, medium, campaign, country, device, browser, converted, "
    "identified, pages, events FROM {ks}.site_sessions WHERE site_id = ? AND day = ? AND shard = ?"
)
EVENTS = (
    "SELECT type, name, url, element, layout FROM {ks}.site_events_by_bucket "
    "WHERE site_id = ? AND bucket = ? AND shard = ?"
)


@pytest.fixture(scope="module")
def built(django_db_setup, django_db_blocker) -> Iterator[World[Any]]:
    """The shop every test here reads, built once (tests/support/shared.py)."""
    yield from built_once(django_db_blocker, _shop)


@pytest.fixture
def shop(built, db):
    return restored(built)


def _shop():
    site = sites.site_create(name="Demo Shop", origins=["http://127.0.0.1:8000"])
    demo.demo_goals_add(site)
    accepted = demo.clicks_generate(site=site, users=60, days=1, now=FIXED_NOW, seed=3)
    assert accepted > 500
    return site


def _sessions(site, now) -> list[dict]:
    statement = prepare(SESSIONS)
    days = [timebuckets.floor(now - timedelta(days=d), "day") for d in (0, 1)]
    return [
        row
        for day in days
        for shard in range(settings.SESSION_SHARDS)
        for row in cassandra_session().execute(statement, (site.id, day, shard))
    ]


def test_demo_sessions_come_from_many_sources_countries_and_devices(shop, now) -> None:
    rows = _sessions(shop, now)
    assert len(rows) >= 60
    media = Counter(r["medium"] for r in rows)
    assert {"search", "social", "referral", "email", "direct", "cpc"} <= set(media), media
    assert len({r["source"] for r in rows}) >= 8
    assert len({r["campaign"] for r in rows if r["campaign"]}) >= 2
    assert len({r["country"] for r in rows if r["country"]}) >= 8
    assert None not in {r["country"] for r in rows}
    assert {"desktop", "mobile", "tablet"} <= {r["device"] for r in rows}
    assert len({r["browser"] for r in rows if r["browser"]}) >= 4
    assert any(r["converted"] for r in rows) and any(r["identified"] for r in rows)
    assert len({p for r in rows for p in r["pages"] or ()}) >= 6
    assert {"add_to_cart", "purchase", "$identify"} <= {e for r in rows for e in r["events"] or ()}
    # converted: the visit reached one of the demo site's goals (a purchase, the checkout)
    for r in rows:
        reached = "purchase" in (r["events"] or ()) or "/demo/checkout" in (r["pages"] or ())
        assert r["converted"] == reached, r


def test_every_generated_page_and_click_is_the_demo_shops_own(shop, now, client) -> None:
    statement = prepare(EVENTS)
    end = timebuckets.floor(now, "hour")
    rows = [
        row
        for hours in range(26)
        for shard in range(4)
        for row in cassandra_session().execute(
            statement, (shop.id, end - timedelta(hours=hours), shard)
        )
    ]
    assert rows
    pages = {urlsplit(r["url"]).path for r in rows}
    assert pages <= set(demo.LAYOUT)
    for page in pages:  # the shop shows each of them as a view of its own
        html = client.get(page).content.decode()
        assert f'data-view="{page}"' in html, page
    assert all(r["url"].startswith("http://127.0.0.1:8000/demo/") for r in rows)
    selectors = {page: {e["selector"] for e in demo.LAYOUT[page]["elements"]} for page in pages}
    for r in rows:
        if r["type"] == "click":
            element = orjson.loads(r["element"])
            assert element["selector"] in selectors[urlsplit(r["url"]).path]


@pytest.mark.parametrize("vp", [">1024", "<640"])
def test_a_demo_pages_heatmap_has_clicks_rage_dead_and_scroll(shop, now, vp) -> None:
    end = timebuckets.next_start(timebuckets.floor(now, "hour"), "hour")
    answer, _ = reads.range_answer(
        site_id=shop.id, page="/demo/", vp=vp, start=end - timedelta(hours=48), end=end
    )
    assert answer["clicks"] > 0 and answer["grid"]["cells"]
    assert answer["scroll"]["views"] > 0
    reach = dict(answer["scroll"]["reach"])
    assert 0 < reach[100] < 1  # some read to the end, not all
    products, _ = reads.range_answer(
        site_id=shop.id,
        page="/demo/products/grinder",
        vp=vp,
        start=end - timedelta(hours=48),
        end=end,
    )
    flagged = [e for e in answer["elements"] + products["elements"] if e["rage"] or e["dead"]]
    assert flagged


def test_the_demo_site_comes_with_goals_its_conversion_rate_counts(db) -> None:
    site, _ = demo.demo_site_ensure(origins=["http://127.0.0.1:8000"])
    again, created = demo.demo_site_ensure(origins=["http://127.0.0.1:8000"])
    assert again.pk == site.pk and not created
    goals = site_goals(site.id)
    assert sorted(g.name for g in goals) == ["Purchase", "Reached checkout"]  # once each
    assert conversion_label(goals) == "any goal"


# The span: six weeks of `make run`'s 90 days, with fewer visitors (the same code path).
SPAN_DAYS, SPAN_USERS = 42, 110
RAW = (
    "SELECT ts, type, name, user_key, url, layout "
    "FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ?"
)
REPLAYED = (
    "SELECT session_id, replay FROM {ks}.site_sessions WHERE site_id = ? AND day = ? AND shard = ?"
)


@pytest.fixture(scope="module")
def weeks_built(django_db_setup, django_db_blocker) -> Iterator[World[Any]]:
    yield from built_once(django_db_blocker, _weeks)


@pytest.fixture
def weeks(weeks_built, db):
    return restored(weeks_built)


def _weeks():
    site = sites.site_create(name="Demo Shop", origins=["http://127.0.0.1:8000"])
    site.replay = True
    site.save(update_fields=["replay"])
    demo.demo_goals_add(site)
    demo.clicks_generate(
        site=site,
        users=SPAN_USERS,
        days=SPAN_DAYS,
        now=FIXED_NOW,
        seed=11,
        replays=demo_replays.chunks_send,
    )
    demo.demo_seal(site=site, now=FIXED_NOW)
    return site


def _raw(site) -> list[dict]:
    """Every stored event of the weeks, read hour by hour from every shard."""
    end = timebuckets.floor(FIXED_NOW, "hour")
    keys = [
        (site.id, end - timedelta(hours=h), shard)
        for h in range(24 * (SPAN_DAYS + 1))
        for shard in range(site.event_shards)
    ]
    results = execute_concurrent_with_args(
        cassandra_session(), prepare(RAW), keys, concurrency=32, raise_on_first_error=True
    )
    return [row for _ok, rows in results for row in rows]


def test_six_weeks_cover_its_days_busier_on_weekdays_and_rising(weeks) -> None:
    rows = [r for r in _raw(weeks) if r["type"] == "pageview"]
    by_day = Counter(r["ts"].date() for r in rows)
    assert len(by_day) >= SPAN_DAYS - 3, sorted(by_day)
    weekday = [n for day, n in by_day.items() if day.weekday() < 5]
    weekend = [n for day, n in by_day.items() if day.weekday() >= 5]
    assert sum(weekday) / len(weekday) > 1.3 * sum(weekend) / len(weekend)
    first = sum(n for day, n in by_day.items() if day < (FIXED_NOW - timedelta(days=28)).date())
    last = sum(n for day, n in by_day.items() if day >= (FIXED_NOW - timedelta(days=14)).date())
    assert last > 1.1 * first  # the trend: the last fortnight busier than the first
    hours = Counter(r["ts"].hour for r in rows)
    assert hours[12] > 3 * hours[3]  # the daily curve: midday, not the small hours


def test_visitors_come_back_in_later_weeks(weeks) -> None:
    seen_in: dict[str, set[int]] = {}
    for r in _raw(weeks):
        week = (FIXED_NOW - r["ts"].replace(tzinfo=UTC)).days // 7
        seen_in.setdefault(r["user_key"], set()).add(week)
    loyal = [key for key, seen in seen_in.items() if len(seen) >= 3]
    assert len(loyal) >= 5
    assert any(key.startswith("cust-") for key in loyal)  # logged in, under their user id
    returning = sum(len(seen) >= 2 for seen in seen_in.values())
    # a share (keys: a visitor who logged in on a return is two, each seen less often)
    assert 0.1 * len(seen_in) < returning < 0.8 * len(seen_in)


def test_rage_and_dead_clicks_on_several_pages_and_goals_met_across_the_weeks(weeks) -> None:
    rows = _raw(weeks)
    flags = [
        (urlsplit(r["url"]).path, orjson.loads(r["layout"] or "{}"))
        for r in rows
        if r["type"] == "click"
    ]
    rage = {page for page, layout in flags if layout.get("rage")}
    dead = {page for page, layout in flags if layout.get("dead")}
    assert len(rage) >= 3 and len(dead) >= 3, (rage, dead)
    assert {g.name for g in site_goals(weeks.id)} == {"Purchase", "Reached checkout"}

    def fortnights(rows) -> set[int]:
        return {(FIXED_NOW - r["ts"].replace(tzinfo=UTC)).days // 14 for r in rows}

    assert fortnights(r for r in rows if r["name"] == "purchase") == {0, 1, 2}
    checkout = (r for r in rows if r["type"] == "pageview" and r["url"].endswith("/checkout"))
    assert fortnights(checkout) == {0, 1, 2}


def test_the_weeks_are_sealed(weeks) -> None:
    hours = BucketState.objects.filter(site=weeks, granularity="hour")
    assert hours.count() > 3 * SPAN_DAYS
    assert not hours.exclude(state=BucketState.SEALED).exists()
    days = BucketState.objects.filter(site=weeks, granularity="day")
    assert days.count() >= SPAN_DAYS - 5
    assert (
        not days.exclude(state=BucketState.SEALED)
        .exclude(bucket__gte=FIXED_NOW - timedelta(days=1))
        .exists()
    )


def test_a_share_of_recent_sessions_has_a_replay_of_the_shop(weeks) -> None:
    statement = prepare(REPLAYED)
    recent = [
        row
        for d in range(28)
        for shard in range(settings.SESSION_SHARDS)
        for row in cassandra_session().execute(
            statement, (weeks.id, timebuckets.floor(FIXED_NOW - timedelta(days=d), "day"), shard)
        )
    ]
    replayed = [r["session_id"] for r in recent if r["replay"]]
    assert 0.07 * len(recent) < len(replayed) < 0.3 * len(recent), (len(replayed), len(recent))
    chunk_rows = prepare(
        "SELECT page_start, seq, data FROM {ks}.replay_chunks WHERE site_id = ? AND session_id = ?"
    )
    clicked = 0
    for session_id in replayed[:8]:
        stored = list(cassandra_session().execute(chunk_rows, (weeks.id, session_id)))
        bodies = [orjson.loads(chunks.stored_text(row["data"])) for row in stored]
        meta, snapshot = bodies[0]["events"][:2]
        assert (meta["type"], snapshot["type"]) == (4, 2)  # a page load: meta, the snapshot
        assert meta["data"]["href"].startswith("http://127.0.0.1:8000/demo/")
        nodes, stack = set(), [snapshot["data"]["node"]]
        while stack:
            node = stack.pop()
            nodes.add(node["id"])
            stack.extend(node.get("childNodes", ()))
        changes = [e for body in bodies for e in body["events"]][2:]
        assert all(e["type"] == 3 for e in changes)  # then changes, mouse and scrolls only
        clicks = [e["data"] for e in changes if e["data"]["source"] == 2 and e["data"]["type"] == 2]
        assert all(click["id"] in nodes for click in clicks)  # on the shop's own elements
        clicked += len(clicks)
        assert sum(len(row["data"]) for row in stored) < 30_000  # modest: the CSS stored once
    assert clicked
