"""A new sealed product is one declaration on the generic store and its entry in PRODUCTS
(ARCHITECTURE.md, "Add a sealed product"). This test declares one the product does not
have (each visitor's page views), adds it to PRODUCTS as a release would, and finds it:

- sealed: each hour's stored value equals a brute-force count of the hour's raw rows;
- merged: the day holds the sum of its hours, the month its day;
- retained: its rows carry the aggregate retention of their resolution, a changed policy
  included, and the retention policies list its table;
- erased: after a visitor's erasure the hours, day and month hold none of their views,
  and the others' views as before.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User

from sessions_app import tasks
from sessions_app.domain.aggregates import product_rows, seal, sources
from sessions_app.domain.aggregates import products as catalogue
from sessions_app.domain.erasure import erasures
from sessions_app.domain.ledger import policies
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.models import BucketState, ErasureRequest
from sessions_app.foundation.tables import registry, retention_specs
from tests.support.clock import recent_fixed
from tests.support.erasure import record_batch
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

PageViews = dict[str, int]  # visitor: page views


def _views_merge(parts: list[PageViews], *, start: datetime) -> PageViews:
    summed: Counter[str] = Counter()
    for part in parts:
        summed.update(part)
    return dict(summed)


PAGE_VIEWS = product_rows.declare(
    name="test_page_views",
    hour=lambda source: {
        user: counts["pageview"]
        for user, counts in source.counted.users.items()
        if counts.get("pageview")
    },
    merge=_views_merge,
    parts=lambda value: sorted(value.items()),
    whole=dict,
)

TTL_OF = """
SELECT TTL(value) AS ttl FROM {ks}.bucket_products
WHERE site_id = ? AND granularity = ? AND bucket = ? AND product = ?
"""


@pytest.fixture
def declared(monkeypatch, erasure_in_process) -> None:
    monkeypatch.setattr(catalogue, "PRODUCTS", (*catalogue.PRODUCTS, PAGE_VIEWS))


def _brute(site: Any, hour: datetime) -> PageViews:
    """The hour's page views per visitor, from its raw rows on every shard."""
    shards = BucketState.objects.get(site=site, granularity="hour", bucket=hour).shards
    rows = sources.site_bucket_rows(site_id=site.id, hour=hour, shards=shards)
    return dict(Counter(r["user_key"] for r in rows if r["type"] == "pageview"))


def _stored(site: Any, granularity: str, bucket: datetime) -> PageViews:
    found = PAGE_VIEWS.read(site_id=site.id, granularity=granularity, buckets=[bucket])
    return found[0] if found else {}


def _ttls(site: Any, granularity: str, bucket: datetime) -> list[int]:
    rows = cassandra_session().execute(
        prepare(TTL_OF), (site.id, granularity, bucket, PAGE_VIEWS.name)
    )
    return [row["ttl"] for row in rows]


def _visits(site: Any, hours: list[datetime]) -> None:
    """Five visitors' page views and clicks over the hours, a request per visitor and hour."""
    rng = random.Random(58)
    for hour in hours:
        for visitor in range(5):
            times = sorted(rng.sample(range(1, 50), rng.randrange(1, 6)))
            kinds = [rng.choice(["pageview", "pageview", "click"]) for _ in times]
            events = [
                event(hour + timedelta(minutes=m), kind=k, anon=f"v{visitor}")
                for m, k in zip(times, kinds, strict=True)
            ]
            assert record_batch(site, hour + timedelta(minutes=55), events).accepted == len(times)


def _sealed_through_the_month(site: Any, hours: list[datetime]) -> tuple[datetime, datetime]:
    now = timebuckets.floor(hours[-1], "day") + timedelta(days=1, hours=1)
    for hour in hours:
        assert seal.bucket_seal(site_id=site.id, hour=hour, now=now)
    day, month = timebuckets.floor(hours[0], "day"), timebuckets.floor(hours[0], "month")
    assert seal.bucket_rollup(site_id=site.id, granularity="day", bucket=day, now=now)
    assert seal.bucket_rollup(site_id=site.id, granularity="month", bucket=month, now=now)
    return day, month


def _assert_sealed_and_merged(site: Any, hours: list[datetime], day: datetime, month: datetime):
    summed: Counter[str] = Counter()
    for hour in hours:
        counted = _brute(site, hour)
        assert _stored(site, "hour", hour) == counted, hour
        summed.update(counted)
    assert _stored(site, "day", day) == dict(summed)
    assert _stored(site, "month", month) == dict(summed)
    return dict(summed)


def test_a_declared_product_is_sealed_merged_retained_and_erased(site, declared):
    # A day two back, whatever the hour of the run: every hour of it has ended.
    first = recent_fixed(days_ago=2, at=timedelta(hours=9))
    hours = [first + timedelta(hours=i) for i in range(3)]
    _visits(site, hours)
    day, month = _sealed_through_the_month(site, hours)

    before = _assert_sealed_and_merged(site, hours, day, month)
    assert before.get("v0") and len(before) == 5

    # Retained: each resolution's rows carry its aggregate policy's TTL.
    for granularity, bucket in (("hour", hours[0]), ("day", day), ("month", month)):
        key = retention_specs.aggregate_key(granularity)
        assert PAGE_VIEWS.name and "bucket_products" in registry.tables_of_policy(key)
        want = policies.ttl_seconds(key)
        assert all(want - 600 <= ttl <= want for ttl in _ttls(site, granularity, bucket))
    admin = User.objects.create_superuser("root", password="pw-root-123")
    hour_key = retention_specs.aggregate_key("hour")
    shorter = policies.ttl_seconds(hour_key) // 86_400 - 30
    policies.retention_set(key=hour_key, days=shorter, actor=admin)

    # Erased: the erasure reseals the visitor's hours, day and month without them.
    request = erasures.erasure_request(
        site=site, key="v0", kind=ErasureRequest.ANONYMOUS_ID, requested_by=admin
    )
    tasks.erase_user.apply(args=[str(request.pk)]).get()
    request.refresh_from_db()
    assert request.state == ErasureRequest.DONE
    after = _assert_sealed_and_merged(site, hours, day, month)
    assert after == {user: n for user, n in before.items() if user != "v0"}
    # The resealed hours carry the policy as it now is.
    ttls = [ttl for hour in hours for ttl in _ttls(site, "hour", hour)]
    assert ttls and all(shorter * 86_400 - 600 <= ttl <= shorter * 86_400 for ttl in ttls)
