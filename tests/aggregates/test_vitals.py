"""Web vitals (aggregates/vitals.py, vitals/reads.py): quantiles from the sketches against
the exact quantile of the raw values, for Hypothesis-drawn values, splits and ranges;
good / needs improvement / poor counts and the worst elements against a recount (the
collector's check: tests/ingest/test_vitals.py).
"""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sessions_app.aggregates import sources, vitals
from sessions_app.aggregates.labels import page_path
from sessions_app.aggregates.vitals import ALPHA, METRICS, SMALLEST
from sessions_app.aggregates.vitals_packed import packed_merge, packed_quantile, packed_unpack
from sessions_app.core import timebuckets
from sessions_app.models import BucketState
from sessions_app.vitals import reads
from tests.aggregates.test_breakdowns import seal_everything
from tests.analysis.dataset import AGENTS, SHOP
from tests.support.clock import recent_fixed
from tests.support.events import event, post

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

PAGES = ["", "products", "products/1", "cart", "über/ümlaut 🛒"]
ELEMENTS = ["img.hero", "main>p.lead", "button#buy", "div.banner", "<svg> “quoted” ✓"]


def close(estimate: float | None, exact: float | None) -> bool:
    """Within ALPHA of the exact value (values at or under SMALLEST are counted as 0)."""
    if exact is None or estimate is None:
        return estimate is None and exact is None
    if exact <= SMALLEST:
        return estimate == 0
    return abs(estimate - exact) <= ALPHA * exact * (1 + 1e-9)


# --- the sketch alone --------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(  # zeros too: CLS is often 0, a slot of its own
        st.one_of(st.just(0.0), st.floats(0, 600_000, allow_nan=False)), min_size=1, max_size=400
    ),
    cuts=st.lists(st.integers(0, 400), max_size=6),
    q=st.sampled_from([0.0, 0.5, 0.75, 0.9, 0.99, 1.0]),
)
@example(values=[0.0, 5.0, 0.0, 7.0, 10.0], cuts=[3], q=0.5)  # zeros in two parts
def test_a_quantile_of_merged_sketches_is_within_one_percent_of_the_exact_one(values, cuts, q):
    edges = sorted({0, len(values), *(c for c in cuts if c < len(values))})
    parts = []
    for low, high in itertools.pairwise(edges):  # each part its own sketch, packed and read
        part = Counter(vitals.slot(v) for v in values[low:high])
        parts.append(packed_unpack(vitals.sketch_pack(part)))
    merged = packed_merge(parts)
    assert close(packed_quantile(merged, q), vitals.exact_quantile(values, q))


# --- through the collector, the seal and the reads ----------------------------------------------
def _measurement(rng: random.Random) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for metric in METRICS:
        if rng.random() < 0.15:
            continue  # not every metric is measured every time (INP needs an interaction)
        if metric.name == "cls":
            props["cls"] = 0 if rng.random() < 0.3 else round(rng.lognormvariate(-2.5, 1.2), 6)
        else:
            props[metric.name] = round(
                rng.lognormvariate(7, 0.7) * (0.2 if metric.name == "inp" else 1), 1
            )
        if metric.name in vitals.ELEMENT_OF and rng.random() < 0.8:
            props[vitals.ELEMENT_OF[metric.name]] = rng.choice(ELEMENTS)
    if not props:
        props["ttfb"] = 120.0
    return props


@pytest.fixture
def measured(client, site):
    """Page views with their $vitals over ~30 hours (some sent in two parts, a bot's
    too), sealed; then late ones that stay live."""
    rng = random.Random(40)
    now = recent_fixed(days_ago=1, at=timedelta(hours=8, minutes=9, seconds=26))
    for i in range(60):
        ts = now - timedelta(minutes=rng.randrange(90, 30 * 60))
        url = SHOP + rng.choice(PAGES)
        view = event(ts, anon=f"v{i}", url=url)
        props = _measurement(rng)
        cut = rng.randrange(1, len(props) + 1)
        parts = [dict(list(props.items())[:cut]), dict(list(props.items())[cut:])]
        events = [view]
        for n, part in enumerate(p for p in parts if any(m.name in p for m in METRICS)):
            kept = {k: v for k, v in part.items() if not k.endswith("_el") or k[:-3] in part}
            at = ts + timedelta(seconds=5 + n * 60)
            body = {"pageview": view["id"], **kept}
            events.append(event(at, kind="custom", name="$vitals", anon=f"v{i}", url=url,
                                props=body))  # fmt: skip
        agent, ip = AGENTS[i % len(AGENTS)], ["8.8.8.8", "81.2.69.160", "1.1.1.1"][i % 3]
        response = post(client, site, events, HTTP_USER_AGENT=agent, REMOTE_ADDR=ip)
        assert response.json()["accepted"] == len(events), response.json()
    bot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
    ts = now - timedelta(hours=3)
    bot_events = [event(ts, anon="bot", url=SHOP), event(ts, kind="custom", name="$vitals",
                  anon="bot", url=SHOP, props={"pageview": "x", "lcp": 99_999})]  # fmt: skip
    post(client, site, bot_events, HTTP_USER_AGENT=bot)
    seal_everything(site, timezone.now())
    assert BucketState.objects.filter(site=site, granularity="day", state="sealed").exists()
    return now


def raw_values(site, start: datetime, end: datetime) -> list[dict[str, Any]]:
    """Every human $vitals row in [start, end), parsed: plain code over the raw rows."""
    found = []
    for hour in timebuckets.buckets_between(start, end, "hour"):
        for row in sources.site_bucket_rows(site_id=site.id, hour=hour, shards=4):
            if row["name"] != "$vitals" or row["is_bot"]:
                continue
            layout = json.loads(row["layout"] or "{}")
            found.append({"page": page_path(row["url"]), "props": json.loads(row["props"]),
                          "device": layout.get("dev", ""), "browser": layout.get("br", ""),
                          "country": layout.get("cc", "")})  # fmt: skip
    return found


def test_p75_of_drawn_ranges_and_filters_is_within_one_percent_of_the_raw_values(site, measured):
    now = measured
    first = timebuckets.floor(now - timedelta(hours=31), "hour")
    every = raw_values(site, first, first + timedelta(hours=34))
    assert len(every) > 50
    devices = sorted({r["device"] for r in every})
    browsers = sorted({r["browser"] for r in every})
    assert len(devices) > 1 and len(browsers) > 1

    @settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        offset=st.integers(0, 33),
        hours=st.integers(1, 40),
        device=st.sampled_from([None, *devices]),
        browser=st.sampled_from([None, *browsers]),
        q=st.sampled_from([0.5, 0.75, 0.95]),
    )
    def check(offset, hours, device, browser, q) -> None:
        start = first + timedelta(hours=offset)
        end = start + timedelta(hours=hours)
        filters = {k: v for k, v in (("device", device), ("browser", browser)) if v}
        got = reads.ranged(site_id=site.id, start=start, end=end, zone=UTC, grain="day",
                           filters=filters, by_page=False).total().get("")  # fmt: skip
        rows = [r for r in raw_values(site, start, end)
                if all(r[k] == v for k, v in filters.items())]  # fmt: skip
        for metric in METRICS:
            values = [r["props"][metric.name] for r in rows if metric.name in r["props"]]
            estimate = packed_quantile(got.sketches.get(metric.name), q) if got else None
            assert close(estimate, vitals.exact_quantile(values, q)), (metric.name, start, end)
            ratings = [0, 0, 0]
            for v in values:
                ratings[0 if v <= metric.good else 1 if v <= metric.poor else 2] += 1
            assert (got.ratings.get(metric.name, [0, 0, 0]) if got else [0, 0, 0]) == ratings

    check()


def test_pages_sort_by_worst_p75_and_a_page_names_its_worst_elements(site, measured):
    now = measured
    start = timebuckets.floor(now - timedelta(hours=31), "hour")
    end = start + timedelta(hours=34)
    rows = raw_values(site, start, end)
    period = reads.Period("custom", start, end, UTC, "off", datetime.now(UTC))
    answer = reads.pages_answer(site_id=site.id, period=period, filters={}, sort="lcp")
    shown = [(p["page"], p["metrics"]["lcp"]["p75"]) for p in answer["pages"]]
    with_lcp = [p for p, v in shown if v is not None]
    assert [v for _, v in shown if v is not None] == sorted(
        (v for _, v in shown if v is not None), reverse=True
    )
    by_page: dict[str, list[float]] = defaultdict(list)
    elements: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        if "lcp" in r["props"]:
            by_page[r["page"]].append(r["props"]["lcp"])
            if "lcp_el" in r["props"]:
                elements[r["page"]][r["props"]["lcp_el"]] += 1
    assert set(with_lcp) == set(by_page)
    for page, p75 in shown:
        if p75 is not None:
            exact = vitals.exact_quantile(by_page[page], 0.75)
            assert abs(p75 - exact) <= ALPHA * exact + 0.5  # shown rounded to the ms
    page = max(elements, key=lambda p: sum(elements[p].values()))
    detail = reads.page_answer(site_id=site.id, period=period, filters={}, page=page)
    assert {e["element"]: e["times"] for e in detail["elements"]["lcp"]} == dict(elements[page])


# --- the product contract's parts (tests/aggregates/test_products.py) ----------------------------
def vitals_events(rng: random.Random, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A $vitals event for each page view of a visit, a second after it."""
    return [
        event(timebuckets.as_utc(datetime.fromisoformat(e["ts"])) + timedelta(seconds=1),
              kind="custom", name="$vitals", anon=e["anonymous_id"], url=e["url"],
              props={"pageview": e["id"], **_measurement(rng)})
        for e in events
        if e["type"] == "pageview"
    ]  # fmt: skip


def brute(rows: list[dict[str, Any]]) -> dict[Any, Any]:
    """A bucket's stored vitals as plain data, counted from its raw rows: each level's
    sketch slots, ratings and elements (the site's row names none)."""
    found: dict[Any, Any] = {}
    for row in rows:
        if row["name"] != "$vitals" or row["is_bot"]:
            continue
        layout, props = json.loads(row["layout"] or "{}"), json.loads(row["props"])
        key = (page_path(row["url"]), layout.get("dev", ""), layout.get("cc", ""),
               layout.get("br", ""))  # fmt: skip
        for level, at in ((0, ("", "", "", "")), (1, (key[0], "", "", "")), (2, key)):
            cell = found.setdefault((level, at), {"s": {}, "r": {}, "e": {}})
            for metric in METRICS:
                if metric.name not in props:
                    continue
                value = props[metric.name]
                slots = cell["s"].setdefault(metric.name, Counter())
                slots[vitals.slot(value)] += 1
                rated = 0 if value <= metric.good else 1 if value <= metric.poor else 2
                cell["r"].setdefault(metric.name, [0, 0, 0])[rated] += 1
                element = props.get(f"{metric.name}_el")
                if element and level:
                    cell["e"].setdefault(metric.name, Counter())[element] += 1
    return {
        key: {"s": {m: dict(s) for m, s in c["s"].items()}, "r": c["r"],
              "e": {m: dict(e) for m, e in c["e"].items()}}
        for key, c in found.items()
    }  # fmt: skip


def plain(stored: vitals.Stored) -> dict[Any, Any]:
    return {
        key: {"s": {m: {i: n for i, n in s.items() if n} for m, s in cell.sketches.items()},
              "r": cell.ratings,
              "e": {m: {label: int(v[0]) for label, v in e.items()}
                    for m, e in cell.elements.items() if e}}
        for key, cell in stored.items()
    }  # fmt: skip
