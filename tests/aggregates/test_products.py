"""The contract every aggregate product keeps (domain/aggregates/products.py), run against each
entry of PRODUCTS: a sealed hour equals a brute-force recount of its raw rows, a day
equals the merge of its hours, and a live hour equals the sealed one.

Visitors go through /collect over ~30 hours (page views, clicks with positions, rage and
dead, `$pageleave` readings, sessions across hour edges, a bot); everything seals. Each
product's brute force reads the raw rows (and, for breakdowns, the sessions' stored
summaries) and counts them with plain code of its own; a product without one fails
`test_every_product_has_a_brute_force`.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from sessions_app.domain.aggregates import breakdowns, paths, seal, sources, totals, usersets
from sessions_app.domain.aggregates.product import Product
from sessions_app.domain.aggregates.products import PRODUCTS
from sessions_app.foundation.core import pagepaths, timebuckets
from sessions_app.foundation.core.ids import uuid_time
from sessions_app.foundation.models import BucketState, Goal
from sessions_app.foundation.tables import user_sessions
from tests.support import breakdowns as support_breakdowns
from tests.support import goal_brute, recount
from tests.support import heatmaps as support_heatmaps
from tests.support import paths as support_paths
from tests.support import vitals as support_vitals
from tests.support.clock import recent_fixed
from tests.support.dataset import AGENTS
from tests.support.paths import send
from tests.support.sealing import seal_everything
from tests.support.shared import World, built_once, restored, shop_site

pytestmark = [
    pytest.mark.django_db(databases=["default", "cassandra"]),
    pytest.mark.xdist_group("products"),  # one worker builds the traffic once
]


class Traffic:
    """The sealed hours and days of the site, and their raw rows (every shard); the
    site's goals' digests."""

    def __init__(self, site: Any, goals: dict[str, str]) -> None:
        self.site, self.goals = site, goals
        states = BucketState.objects.filter(site=site, state=BucketState.SEALED)
        self.shards = {
            timebuckets.as_utc(b): n
            for b, n in states.filter(granularity="hour").values_list("bucket", "shards")
        }
        self.days = [
            timebuckets.as_utc(b)
            for b in states.filter(granularity="day").values_list("bucket", flat=True)
        ]
        self.rows = {
            hour: list(sources.site_bucket_rows(site_id=site.id, hour=hour, shards=n))
            for hour, n in self.shards.items()
        }

    def all_rows(self) -> list[dict[str, Any]]:
        return [row for rows in self.rows.values() for row in rows]


@pytest.fixture(scope="module")
def built(django_db_setup, django_db_blocker) -> Iterator[World[Traffic]]:
    """The traffic every test here reads, built once (tests/support/shared.py)."""
    yield from built_once(django_db_blocker, _traffic)


@pytest.fixture
def traffic(built, db) -> Traffic:
    return restored(built)


def _traffic() -> Traffic:
    client = Client()
    site = shop_site()
    rng = random.Random(36)
    # Yesterday 08:09 whatever the hour of the run: the 30 hours before it hold a whole
    # day, and every hour a visit reaches is due for sealing now.
    now = recent_fixed(days_ago=1, at=timedelta(hours=8, minutes=9, seconds=26))
    goals = goal_brute.goals_add(site, now - timedelta(days=2))
    for i in range(30):
        start = now - timedelta(minutes=rng.randrange(90, 30 * 60))
        events = support_heatmaps.visit(rng, f"v{i}", start)
        events += support_vitals.vitals_events(random.Random(i), events)  # web vitals
        cut = rng.randrange(1, len(events) + 1)  # one or two requests
        for part in (events[:cut], events[cut:]):
            if part:
                send(client, site, part, AGENTS[i % 5])
    send(
        client,
        site,
        support_heatmaps.visit(rng, "bot", now - timedelta(hours=3)),
        support_paths.BOT,
    )
    seal_everything(site, timezone.now())
    found = Traffic(site, goals)
    assert len(found.shards) >= 10 and found.days
    return found


# --- each product's brute force and its values as plain comparable data ---------------


def _totals_brute(traffic: Traffic, hour: datetime) -> dict[str, Any]:
    counted = recount.recount(traffic.site, hour)
    del counted["user_counts"]
    return counted


def _totals_plain(value: totals.Aggregates) -> dict[str, Any]:
    return {
        "events": value.events,
        "by_type": value.by_type,
        "users": value.users,
        "sessions": value.sessions_started,
        "pages": dict(value.top_pages),
        "clicks": dict(value.top_clicks),
    }


def _user_counts_brute(traffic: Traffic, hour: datetime) -> dict[str, dict[str, int]]:
    return recount.recount(traffic.site, hour)["user_counts"]


def _breakdowns_brute(traffic: Traffic, hour: datetime) -> dict[str, Any]:
    """The sessions that started in the hour, from their stored summaries."""
    keys = {row["user_key"] for row in traffic.all_rows()}
    started = [
        {
            **s,
            "user_key": key,
            "entry_path": pagepaths.page_path(s["entry_url"]),
            "exit_path": pagepaths.page_path(s["exit_url"]),
        }
        for key in keys
        for s in user_sessions.session_list(site_id=traffic.site.id, user_key=key)
        if timebuckets.floor(uuid_time(s["session_id"]), "hour") == hour
    ]
    counted = support_breakdowns.brute(started)
    return {name: values for name, values in counted.items() if values}


def _breakdowns_plain(value: breakdowns.Breakdown) -> dict[str, Any]:
    return {name: values for name, values in support_breakdowns.stored(value).items() if values}


def _paths_brute(traffic: Traffic, hour: datetime) -> tuple[Counter[Any], Counter[Any]]:
    end = timebuckets.next_start(hour, "hour")
    grams, entrances, _ = support_paths.brute(traffic.all_rows(), traffic.site, hour, end)
    return grams, entrances


def _paths_plain(value: paths.Stored) -> tuple[Counter[Any], Counter[Any]]:
    grams: Counter[Any] = Counter()
    entrances: Counter[Any] = Counter()
    for (side, anchor), row in value.items():
        if side == paths.FROM:
            grams.update(row.grams)
        for source, n in row.sources.items():
            entrances[anchor, source] += n
    return grams, entrances


def _heatmaps_brute(traffic: Traffic, hour: datetime) -> dict[Any, Any]:
    return support_heatmaps.recount(traffic.rows[hour])


def _heatmaps_plain(value: dict[Any, Any]) -> dict[Any, Any]:
    return {key: support_heatmaps.plain(heat) for key, heat in value.items()}


def _user_sets_brute(traffic: Traffic, hour: datetime) -> dict[str, int]:
    """Users with a human event in the hour, and which of them did each event key (their
    bot events too) and reached each goal ("goal:<id>", human events only); tests/cohorts
    checks who they are."""
    rows = traffic.rows[hour]
    humans = {r["user_key"] for r in rows if not r.get("is_bot")}
    members: dict[str, set[str]] = {usersets.ACTIVE: humans}
    ids = dict(Goal.objects.filter(site=traffic.site).values_list("name", "pk"))
    for r in rows:
        if r["user_key"] in humans:
            key = (r.get("name") if r["type"] == "custom" else None) or r["type"]
            members.setdefault(key, set()).add(r["user_key"])
            for name, goal in goal_brute.GOALS.items():
                if not r.get("is_bot") and goal_brute.matches(goal, r):
                    members.setdefault(usersets.goal_set(ids[name]), set()).add(r["user_key"])
    return {name: len(users) for name, users in members.items()}


def _user_sets_plain(value: usersets.KeySets | usersets.Sets) -> dict[str, int]:
    members = value.members.items()
    return {name: len(users) for name, users in members if users or name == usersets.ACTIVE}


def _vitals_brute(traffic: Traffic, hour: datetime) -> dict[Any, Any]:
    return support_vitals.brute(traffic.rows[hour])


def _goals_brute(traffic: Traffic, hour: datetime) -> dict[Any, Any]:
    """The goals' conversions in the hour, each converting session's breakdown values
    from its stored summary."""
    keys = {row["user_key"] for row in traffic.all_rows()}
    sessions = {
        s["session_id"]: {
            **s,
            "entry_path": pagepaths.page_path(s["entry_url"]),
            "exit_path": pagepaths.page_path(s["exit_url"]),
        }
        for key in keys
        for s in user_sessions.session_list(site_id=traffic.site.id, user_key=key)
    }

    def dimensions_of(session_id: Any) -> dict[str, Any]:
        return {d: sessions[session_id][c] for d, c in goal_brute.BREAKS.items()}

    return goal_brute.brute(traffic.rows[hour], goal_brute.GOALS, traffic.goals, dimensions_of)


Brute = Callable[[Traffic, datetime], Any]
CASES: dict[str, tuple[Brute, Callable[[Any], Any]]] = {
    "totals": (_totals_brute, _totals_plain),
    "user_counts": (_user_counts_brute, dict),
    "breakdowns": (_breakdowns_brute, _breakdowns_plain),
    "paths": (_paths_brute, _paths_plain),
    "heatmaps": (_heatmaps_brute, _heatmaps_plain),
    "user_sets": (_user_sets_brute, _user_sets_plain),
    "vitals": (_vitals_brute, support_vitals.plain),
    "goals": (_goals_brute, goal_brute.plain),
}


def test_every_product_has_a_brute_force():
    assert [p.name for p in PRODUCTS] and {p.name for p in PRODUCTS} == set(CASES)


def _stored(product: Product[Any], site: Any, granularity: str, bucket: datetime) -> Any:
    found = product.read(site_id=site.id, granularity=granularity, buckets=[bucket])
    return found[0] if found else product.merge([], start=bucket)


@pytest.mark.parametrize("product", PRODUCTS, ids=lambda p: p.name)
class TestProductContract:
    def test_a_sealed_hour_equals_the_brute_force_recount(self, traffic, product):
        brute, plain = CASES[product.name]
        for hour in traffic.shards:
            got = plain(_stored(product, traffic.site, "hour", hour))
            assert got == brute(traffic, hour), (product.name, hour)

    def test_a_day_equals_the_merge_of_its_hours(self, traffic, product):
        _, plain = CASES[product.name]
        for day in traffic.days:
            hours = timebuckets.buckets_between(day, timebuckets.next_start(day, "day"), "hour")
            parts = product.read(site_id=traffic.site.id, granularity="hour", buckets=hours)
            assert parts, (product.name, day)
            merged = product.merge(parts, start=day)
            assert plain(_stored(product, traffic.site, "day", day)) == plain(merged), day

    def test_a_live_hour_equals_the_sealed_hour(self, traffic, product):
        _, plain = CASES[product.name]
        for hour, shards in traffic.shards.items():
            live = seal.hour_live(
                site_id=traffic.site.id, hour=hour, shards=shards, products=(product,)
            )
            sealed = _stored(product, traffic.site, "hour", hour)
            assert plain(live[product.name]) == plain(sealed), (product.name, hour)
