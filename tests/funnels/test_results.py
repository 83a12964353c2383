"""Funnels against a brute force over the raw events.

Visitors go through /collect over four days (sessions that cross midnight, product
views, add-to-cart clicks, checkout events with a plan property, a bot); the hours and
days seal; then late events land in sealed days (reopening them) and the days reseal.
Random funnels (page views exact / prefix / pattern, clicks by selector or text, events
with or without a property condition; per user or per session; the session, two hours or
a day as the window) are compared step by step with a brute force that reads the raw
rows, matches steps with its own code, and for every unit tries every first-step event
as the start, taking the earliest events after it (the definition in features/funnels/results.py).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from sessions_app.domain.ledger import policies, sites
from sessions_app.features.funnels import defs, results
from sessions_app.foundation.core import stamps, timebuckets
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.ids import cassandra_order
from sessions_app.foundation.tables import funnel_days, retention_specs, user_sessions
from tests.support.accounts import member
from tests.support.dataset import AGENTS, SHOP
from tests.support.events import event
from tests.support.funnels import STEP_POOL, brute, ms, raw_rows, send, shop_build
from tests.support.sealing import seal_everything
from tests.support.shared import World, built_once, restored, shop_site

WINDOWS = [{"unit": "session"}, {"unit": "hours", "value": 2}, {"unit": "days", "value": 1}]

# One worker builds the shop once for the tests that read it (`world`); the test that
# sends late events to it has a shop of its own (`shop`, tests/funnels/conftest.py).
pytestmark = pytest.mark.xdist_group("funnel-results")


class Shop(NamedTuple):
    site: Any
    start: datetime
    end: datetime


@pytest.fixture(scope="module")
def built(django_db_setup, django_db_blocker) -> Iterator[World[Shop]]:
    """The shop built once (tests/support/shared.py)."""
    yield from built_once(django_db_blocker, _shop)


def _shop() -> Shop:
    site = shop_site()
    with override_settings(FUNNEL_INLINE_DAYS=100):
        return Shop(site, *shop_build(Client(), site))


@pytest.fixture
def world(built, db, settings) -> Shop:
    """The shop built once, its days' cached funnel parts forgotten: a test's first read
    of a funnel scans them, as on a shop of its own."""
    settings.FUNNEL_INLINE_DAYS = 100  # no worker here: every day is scanned in the request
    shop = restored(built)
    forget = prepare(funnel_days.DELETE_DAY, write=True)
    session = cassandra_session()
    days = timebuckets.buckets_between(timebuckets.floor(shop.start, "day"), shop.end, "day")
    for deleted in [session.execute_async(forget, (shop.site.id, day)) for day in days]:
        deleted.result()
    return shop


# ---- the brute force ----------------------------------------------------------------


def nearest_rank(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    rank = -(-len(ordered) * q // 1)
    return ordered[max(1, int(rank)) - 1]


def random_definition(rng: random.Random) -> dict[str, Any]:
    count_by = rng.choice(["user", "session"])
    return {
        "steps": rng.sample(STEP_POOL, rng.randrange(2, 5)),
        "count_by": count_by,
        "window": {"unit": "session"} if count_by == "session" else rng.choice(WINDOWS),
    }


@pytest.mark.heavy
def test_random_funnels_equal_the_brute_force_cold_and_warm(world):
    site, start, end = world
    rows = raw_rows(site, start, end)
    rng = random.Random(9)
    checked_levels = set()
    for n in range(24):
        funnel = defs.funnel_create(site=site, name=f"f{n}", definition=random_definition(rng))
        definition = funnel.current.definition
        want = brute(rows, definition, start, end)
        for attempt in ("cold", "warm"):
            result = results.funnel_units(site=site, version=funnel.current, start=start, end=end)
            if attempt == "warm":
                assert result.days_cached >= 3  # the sealed days came from funnel_days
            got = {u.key: u for u in result.units}
            assert set(got) == set(want), (n, attempt)
            for key, chain in want.items():
                assert got[key].level == len(chain), (n, key)
                unit = got[key]
                assert [e[2] for e in unit.chain] == [ms(e["ts"]) for e in chain], (n, key)
                assert unit.start[3] == str(chain[0]["event_id"])
                assert unit.chain[-1][1] == str(chain[-1]["session_id"])
            summary = results.funnel_summary(definition, result, breakdown=None)
            for i, shown in enumerate(summary["steps"]):
                reached = [c for c in want.values() if len(c) > i]
                assert shown["count"] == len(reached)
                gaps = [(c[i]["ts"] - c[i - 1]["ts"]).total_seconds() for c in reached] if i else []
                assert shown["median_s"] == nearest_rank(gaps, 0.5)
                assert shown["p90_s"] == nearest_rank(gaps, 0.9)
            days: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            for chain in want.values():
                days[chain[0]["ts"].date().isoformat()][0] += 1
                days[chain[0]["ts"].date().isoformat()][1] += len(chain) == len(definition["steps"])
            assert {t["day"]: [t["entered"], t["converted"]] for t in summary["trend"]} == days
        checked_levels.update(len(c) for c in want.values())
    assert {1, 2, 3} <= checked_levels  # drop-offs and conversions both happened


def test_a_range_starting_within_a_sealed_day_reads_its_stored_events(world):
    """A day the range holds only part of is answered from its stored matching events
    (funnel_days.matches), cold and warm alike, equal to the brute force."""
    site, start, end = world
    start = start + timedelta(days=1, hours=7, minutes=13)  # within a sealed day
    rows = raw_rows(site, timebuckets.floor(start, "day"), end)
    rng = random.Random(11)
    for n in range(6):
        funnel = defs.funnel_create(site=site, name=f"p{n}", definition=random_definition(rng))
        want = brute(rows, funnel.current.definition, start, end)
        for attempt in ("cold", "warm"):
            result = results.funnel_units(site=site, version=funnel.current, start=start, end=end)
            if attempt == "warm":
                assert result.days_cached >= 2
            got = {u.key: u for u in result.units}
            assert {k: u.level for k, u in got.items()} == {k: len(c) for k, c in want.items()}
            for key, chain in want.items():
                assert [e[2] for e in got[key].chain] == [ms(e["ts"]) for e in chain]
                assert got[key].start[3] == str(chain[0]["event_id"]), (n, attempt, key)


def test_drill_down_lists_who_reached_and_who_dropped_off(world):
    site, start, end = world
    definition = {
        "steps": [STEP_POOL[1], STEP_POOL[4], STEP_POOL[6]],
        "count_by": "user",
        "window": {"unit": "days", "value": 1},
    }
    funnel = defs.funnel_create(site=site, name="shop", definition=definition)
    want = brute(raw_rows(site, start, end), funnel.current.definition, start, end)
    result = results.funnel_units(site=site, version=funnel.current, start=start, end=end)
    for step in (1, 2, 3):
        for outcome in ("reached", "dropped"):
            listed, offset = [], 0
            while offset is not None:
                rows, offset = results.units_page(
                    result, step=step, outcome=outcome, offset=offset, limit=4
                )
                listed.extend(rows)
            expected = {
                k
                for k, c in want.items()
                if len(c) >= step and (outcome == "reached" or len(c) == step)
            }
            assert [r["unit"] for r in listed] == sorted(
                expected,
                reverse=True,
                key=lambda k: (want[k][0]["ts"], cassandra_order(want[k][0]["event_id"]), k),
            )
            for r in listed:
                assert r["session_id"] == str(want[r["unit"]][-1]["session_id"])
    # The breakdown by source: the first step's session, every step.
    summary = results.funnel_summary(funnel.current.definition, result, breakdown="source")
    summaries = {
        c[0]["session_id"]: user_sessions.session_summary(
            site_id=site.id, user_key=c[0]["user_key"], session_id=c[0]["session_id"]
        )
        for c in want.values()
    }
    by_source: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for chain in want.values():
        source = summaries[chain[0]["session_id"]]["source"] or "(none)"
        for i in range(len(chain)):
            by_source[source][i] += 1
    assert {b["value"]: b["counts"] for b in summary["breakdown"]} == by_source


@pytest.mark.heavy
def test_an_edited_funnel_is_a_new_version_and_a_reopened_day_is_scanned_again(client, site, shop):
    start, end = shop
    definition = {"steps": [STEP_POOL[0], STEP_POOL[3]], "count_by": "user"}
    funnel = defs.funnel_create(site=site, name="home to cart", definition=definition)
    first = funnel.current
    cold = results.funnel_units(site=site, version=first, start=start, end=end)
    warm = results.funnel_units(site=site, version=first, start=start, end=end)
    assert warm.days_cached > cold.days_cached
    defs.funnel_update(funnel=funnel, name="renamed")
    assert funnel.current == first  # a new name is not a new definition
    defs.funnel_update(funnel=funnel, definition={**definition, "count_by": "session"})
    assert funnel.current.number == 2 and funnel.current.digest != first.digest
    assert (
        results.funnel_units(site=site, version=funnel.current, start=start, end=end).days_cached
        == 0
    )
    # A late home-to-cart visit two days ago: its day reopens, reseals, and counts it.
    before = len(warm.units)
    two_days = timezone.now() - timedelta(days=2)
    later = two_days + timedelta(minutes=1)
    late = [
        event(two_days, anon="latecomer", url=SHOP + "/"),
        event(later, anon="latecomer", url=SHOP + "/cart"),
    ]
    send(client, site, late, AGENTS[1])
    seal_everything(site, timezone.now())
    again = results.funnel_units(site=site, version=first, start=start, end=end)
    assert len(again.units) == before + 1
    assert {u.key for u in again.units if u.level == 2} >= {"latecomer"}


def test_a_definition_names_its_bad_field(site):
    cases = [
        ({"steps": [STEP_POOL[0]]}, "steps"),
        ({"steps": [STEP_POOL[0], {"kind": "pageview"}]}, "steps[1].path"),
        ({"steps": [STEP_POOL[0], {"kind": "click"}]}, "steps[1].selector"),
        ({"steps": [STEP_POOL[0], {"kind": "nope"}]}, "steps[1].kind"),
        ({"steps": STEP_POOL[:2], "window": {"unit": "days", "value": 400}}, "window.value"),
        (
            {
                "steps": [STEP_POOL[0], STEP_POOL[3]],
                "count_by": "session",
                "window": {"unit": "hours", "value": 2},
            },
            "window",
        ),
        (
            {"steps": [STEP_POOL[0], {**STEP_POOL[6], "properties": [{"key": "a", "op": "bad"}]}]},
            "steps[1].properties[0].op",
        ),
    ]
    for definition, field in cases:
        with pytest.raises(RangeError) as error:
            defs.funnel_create(site=site, name="x", definition=definition)
        assert error.value.field == field, (definition, str(error.value))
    with pytest.raises(RangeError) as error:
        defs.funnel_create(site=site, name="", definition={"steps": STEP_POOL[:2]})
    assert error.value.field == "name"


def test_the_api_saves_edits_and_answers_a_funnel(client, analyst, world):
    site, start, end = world
    member(analyst, site, "admin")  # funnels are defined by the site's admins
    base = f"/api/sites/{site.id}/funnels"
    definition = {
        "steps": [STEP_POOL[1], STEP_POOL[4], STEP_POOL[6]],
        "count_by": "user",
        "window": {"unit": "days", "value": 1},
    }
    made = client.post(
        base, {"name": "Checkout", "definition": definition}, content_type="application/json"
    )
    assert made.status_code == 201, made.content
    funnel_id = made.json()["id"]
    bad = client.post(
        base,
        {"name": "x", "definition": {"steps": [STEP_POOL[0]]}},
        content_type="application/json",
    )
    assert bad.status_code == 400 and bad.json()["field"] == "steps"
    assert [f["name"] for f in client.get(base).json()["funnels"]] == ["Checkout"]
    params = {"start": start.isoformat(), "end": end.isoformat()}
    body = client.get(f"{base}/{funnel_id}/results", {**params, "breakdown": "device"}).json()
    want = brute(raw_rows(site, start, end), body["funnel"]["definition"], start, end)
    assert [s["count"] for s in body["steps"]] == [
        sum(1 for c in want.values() if len(c) > i) for i in range(3)
    ]
    assert body["breakdown"] and body["days"]["pending"] == []
    wrong = client.get(f"{base}/{funnel_id}/results", {**params, "breakdown": "planet"})
    assert wrong.status_code == 400 and wrong.json()["field"] == "breakdown"
    units = client.get(f"{base}/{funnel_id}/units", {**params, "step": 1, "outcome": "dropped"})
    assert len(units.json()["units"]) == sum(1 for c in want.values() if len(c) == 1)
    assert client.get(f"{base}/{funnel_id}/units", {**params, "step": 9}).json()["field"] == "step"
    per_session = {
        "definition": {**definition, "count_by": "session", "window": {"unit": "session"}}
    }
    edited = client.put(f"{base}/{funnel_id}", per_session, content_type="application/json")
    assert edited.json()["version"] == 2
    # Another site's funnel id under this site: not found, like a missing one.
    other = defs.funnel_create(
        site=sites.site_create(name="Other", origins=[]), name="o", definition=definition
    )
    assert client.get(f"{base}/{other.pk}").status_code == 404
    assert client.get(f"{base}/{other.pk}/results").status_code == 404
    assert client.delete(f"{base}/{funnel_id}").status_code == 204
    assert client.get(f"{base}/{funnel_id}").status_code == 404


def test_the_pages_define_show_and_drill_into_a_funnel(client, analyst, world):
    site, start, end = world
    member(analyst, site, "admin")  # funnels are defined by the site's admins
    form = {
        "name": "Views to checkout",
        "step-1-kind": "pageview",
        "step-1-value": "/product/",
        "step-1-match": "prefix",
        "step-2-kind": "event",
        "step-2-value": "checkout",
        "count_by": "user",
        "window_unit": "days",
        "window_value": "1",
    }
    made = client.post(f"/sites/{site.id}/funnels/", form)
    assert made.status_code == 302
    funnel = site.funnels.get()
    assert funnel.current.definition["steps"][0] == {
        "kind": "pageview",
        "path": "/product/",
        "match": "prefix",
        "properties": [],
    }
    bad = client.post(f"/sites/{site.id}/funnels/", {**form, "step-2-kind": ""})
    assert bad.status_code == 400 and "Step 2: choose what the step is" in bad.content.decode()
    params = {"start": start.isoformat(), "end": end.isoformat()}
    page = client.get(f"/sites/{site.id}/funnels/{funnel.pk}/", params)
    assert page.status_code == 200 and b"funnel-steps" in page.content
    dropped = client.get(
        f"/sites/{site.id}/funnels/{funnel.pk}/units/", {**params, "step": 1, "outcome": "dropped"}
    )
    assert dropped.status_code == 200
    html = dropped.content.decode()
    link = html.split('class="timeline-link" href="')[1].split('"')[0].replace("&amp;", "&")
    timeline = client.get(link)
    assert timeline.status_code == 200 and timeline.content.count(b"funnel-chain") == 1


def test_a_cached_day_ends_with_its_raw_rows(client, site, settings):
    """A day's cached part names users and sessions: its TTL ends it no later than the
    day's raw rows (midnight - MAX_AHEAD + the shorter of the raw events' and sessions'
    policies), not with the aggregates; within it, the day is read from the cache."""
    settings.FUNNEL_INLINE_DAYS = 100
    day = timebuckets.floor(timezone.now() - timedelta(days=2), "day")
    at = day + timedelta(hours=10)
    send(
        client,
        site,
        [
            event(at, anon="c1", url=SHOP + "/"),
            event(at + timedelta(minutes=1), kind="custom", anon="c1", name="checkout"),
        ],
        AGENTS[0],
    )
    seal_everything(site, timezone.now())
    steps = [STEP_POOL[0], STEP_POOL[6]]
    funnel = defs.funnel_create(site=site, name="c", definition={"steps": steps})
    end = timebuckets.next_start(day, "day")
    for cached in (0, 1):
        result = results.funnel_units(site=site, version=funnel.current, start=day, end=end)
        assert result.days_cached == cached and [u.level for u in result.units] == [2]
    ttl = "SELECT TTL(details) AS left FROM {ks}.funnel_days WHERE site_id = ? AND day = ?"
    left = cassandra_session().execute(prepare(ttl), (site.id, day)).one()["left"]
    keep = min(
        policies.ttl_seconds(retention_specs.RAW_EVENTS),
        policies.ttl_seconds(retention_specs.SESSIONS),
    )
    ends = day - stamps.MAX_AHEAD + timedelta(seconds=keep)
    # Cassandra counts a TTL in whole seconds from the second the read runs in: `left` may
    # run to the end of that second, up to one past `ends - now` (the write floors it).
    assert -1 < (ends - timezone.now()).total_seconds() - left < 120
    assert left < policies.ttl_seconds(retention_specs.AGGREGATES_DAY) - 86_400
