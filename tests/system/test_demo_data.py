"""The demo data lights up every report: generated visits, sent through the real collector,
come from many sources, countries and devices, convert, rage-click and scroll, and every
page they view and element they click is the demo shop's own (so heatmaps and "View on
page" show them on the shop)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest
from django.conf import settings

from sessions_app.domain.goals.defs import conversion_label, site_goals
from sessions_app.domain.ledger import sites
from sessions_app.domain.system import demo
from sessions_app.features.heatmaps import reads
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
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
