"""Web vitals (domain/aggregates/vitals.py, features/vitals/reads.py): quantiles from the sketches
against the exact quantile of the raw values, for Hypothesis-drawn values, splits and ranges; good /
needs improvement / poor counts and the worst elements against a recount (the collector's check:
tests/ingest/test_vitals.py)."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sessions_app.domain.aggregates import vitals
from sessions_app.domain.aggregates.vitals import ALPHA, METRICS, SMALLEST
from sessions_app.domain.aggregates.vitals_packed import (
    packed_merge,
    packed_quantile,
    packed_unpack,
)
from sessions_app.features.vitals import reads
from sessions_app.foundation.core import timebuckets
from tests.support.hypothesis import examples
from tests.support.shared import World, built_once, restored, shop_site
from tests.support.vitals import raw_values, vitals_measured

pytestmark = [
    pytest.mark.django_db(databases=["default", "cassandra"]),
    pytest.mark.xdist_group("vitals"),  # one worker measures once
]


@pytest.fixture(scope="module")
def built(django_db_setup, django_db_blocker) -> Iterator[World[tuple[Any, datetime]]]:
    """The `measured` page views the tests here read, built once (tests/support/shared.py)."""
    yield from built_once(django_db_blocker, _measured)


def _measured() -> tuple[Any, datetime]:
    site = shop_site()
    return site, vitals_measured(Client(), site)


@pytest.fixture
def site(built, db):
    """The measured site (no test here writes to it)."""
    return restored(built)[0]


@pytest.fixture
def measured(built, site) -> datetime:
    return built.value[1]


def close(estimate: float | None, exact: float | None) -> bool:
    """Within ALPHA of the exact value (values at or under SMALLEST are counted as 0)."""
    if exact is None or estimate is None:
        return estimate is None and exact is None
    if exact <= SMALLEST:
        return estimate == 0
    return abs(estimate - exact) <= ALPHA * exact * (1 + 1e-9)


# --- the sketch alone --------------------------------------------------------------------------
@settings(max_examples=examples(300), deadline=None)
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
def test_p75_of_drawn_ranges_and_filters_is_within_one_percent_of_the_raw_values(site, measured):
    now = measured
    first = timebuckets.floor(now - timedelta(hours=31), "hour")
    every = raw_values(site, first, first + timedelta(hours=34))
    assert len(every) > 50
    devices = sorted({r["device"] for r in every})
    browsers = sorted({r["browser"] for r in every})
    assert len(devices) > 1 and len(browsers) > 1

    @settings(max_examples=examples(20), deadline=None, suppress_health_check=list(HealthCheck))
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
        got = (
            reads.ranged(
                site_id=site.id,
                start=start,
                end=end,
                zone=UTC,
                grain="day",
                filters=filters,
                by_page=False,
            )
            .total()
            .get("")
        )
        rows = [
            r for r in raw_values(site, start, end) if all(r[k] == v for k, v in filters.items())
        ]
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
