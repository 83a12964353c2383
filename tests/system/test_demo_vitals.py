"""The demo data lights up the Performance page: generated visits (what `make run`'s demo
seeding and generate_clicks send) carry `$vitals` events, so after a seal the vitals reads
have all five metrics for the demo pages, the About page's late hero image and banner as
its poor LCP and CLS with their elements, and phones slower than desktops; the counts
are those of the raw events."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from sessions_app.domain.aggregates.vitals import METRICS, SITE
from sessions_app.domain.aggregates.vitals_rows import buckets_read
from sessions_app.domain.system import demo
from sessions_app.features.vitals import reads
from sessions_app.features.web.periods import period_param
from sessions_app.foundation.models import BucketState
from tests.support.clock import recent_fixed
from tests.support.sealing import seal_everything
from tests.support.shared import World, built_once, restored
from tests.support.vitals import raw_values

pytestmark = [
    pytest.mark.django_db(databases=["default", "cassandra"]),
    pytest.mark.xdist_group("demo-vitals"),  # one worker builds the shop once
]

NAMES = [m.name for m in METRICS]
BUSY = ["/demo/", "/demo/products", "/demo/products/espresso-machine", "/demo/about"]


@pytest.fixture(scope="module")
def built(django_db_setup, django_db_blocker) -> Iterator[World[tuple[Any, datetime]]]:
    """The shop every test here reads, built once (tests/support/shared.py)."""
    yield from built_once(django_db_blocker, _shop)


@pytest.fixture
def shop(built, db) -> tuple[Any, datetime]:
    return restored(built)


def _shop() -> tuple[Any, datetime]:
    """200 demo users' visits on yesterday until 20:00, sealed (the demo data's days are
    UTC days; most visitors come back days later, outside it, so it takes more visitors
    than the 60 whose returns all fell inside the day)."""
    site, _ = demo.demo_site_ensure(origins=["http://127.0.0.1:8000"])
    assert site.vitals  # the demo shop measures web vitals
    now = recent_fixed(days_ago=1, at=timedelta(hours=20))
    assert demo.clicks_generate(site=site, users=200, days=1, now=now, seed=3) > 500
    seal_everything(site, timezone.now())
    assert BucketState.objects.filter(site=site, granularity="day", state="sealed").exists()
    return site, now


def _period():
    return period_param({"period": "7d"}, zone=ZoneInfo("UTC"), now=timezone.now())


def test_the_cards_and_the_trend_have_all_five_metrics(shop) -> None:
    site, _ = shop
    answer = reads.summary_answer(site_id=site.id, period=_period(), filters={})
    sealed = [
        ("day", b)
        for b in BucketState.objects.filter(
            site=site, granularity="day", state="sealed"
        ).values_list("bucket", flat=True)
    ]
    stored = buckets_read(site_id=site.id, buckets=sealed)  # read from the sealed rows
    assert stored and all(set(NAMES) <= set(s[0, SITE].sketches) for s in stored)
    cards = {m["name"]: m for m in answer["metrics"]}
    assert set(cards) == set(NAMES)
    for name in NAMES:
        assert cards[name]["n"] > 20 and cards[name]["p75"] is not None, cards[name]
        assert sum(p for p in answer["trend"]["series"][name] if p) > 0
    ratings = {m["rating"] for m in answer["metrics"]}
    assert "good" in ratings  # most of the shop is fast


def test_every_busy_demo_page_has_all_five_and_the_counts_are_the_raw_ones(shop) -> None:
    site, now = shop
    answer = reads.pages_answer(site_id=site.id, period=_period(), filters={}, sort="lcp")
    pages = {row["page"]: row for row in answer["pages"]}
    assert set(pages) <= set(demo.DEMO_PAGES) and set(BUSY) <= set(pages)
    for page in BUSY:
        for name in NAMES:
            assert pages[page]["metrics"][name]["p75"] is not None, (page, name)
    raw = Counter(
        (row["page"], name)
        for row in raw_values(site, now - timedelta(days=2), now + timedelta(hours=1))
        for name in NAMES
        if name in row["props"]
    )
    assert raw
    for page, row in pages.items():
        for name in NAMES:
            assert row["metrics"][name]["n"] == raw[page, name], (page, name)
    assert answer["pages"][0]["page"] == "/demo/about"  # the slowest LCP, on purpose


def test_the_about_page_is_poor_with_its_elements_and_phones_are_slower(shop) -> None:
    site, _ = shop
    about = reads.page_answer(site_id=site.id, period=_period(), filters={}, page="/demo/about")
    metrics = {m["name"]: m for m in about["metrics"]}
    assert metrics["lcp"]["rating"] == "poor" and metrics["cls"]["rating"] == "poor"
    assert about["elements"]["lcp"][0]["element"] == "main>section>img#about-hero"
    assert about["elements"]["cls"][0]["element"] == "main>section>p#promo-banner"
    assert about["elements"]["inp"]  # the Contact button and the nav are clicked
    by_device = {
        device: {
            m["name"]: m["p75"]
            for m in reads.summary_answer(
                site_id=site.id, period=_period(), filters={"device": device}
            )["metrics"]
        }
        for device in ("desktop", "mobile")
    }
    for name in ("lcp", "inp", "fcp"):
        assert by_device["mobile"][name] > by_device["desktop"][name], name
