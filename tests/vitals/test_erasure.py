"""An erased visitor's web vitals leave bucket_vitals: the table keeps no user key, so the
erasure job deletes the visitor's `$vitals` rows with their other raw events and reseals
the hour, day and month (tables/bucket_vitals.SPEC: RESEAL); what is left counts only
the others."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app import tasks
from sessions_app.domain.aggregates import seal, vitals
from sessions_app.domain.aggregates.products import VITALS
from sessions_app.domain.erasure import erasures
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import ErasureRequest
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


@pytest.fixture(autouse=True)
def _no_waiting(settings):
    settings.SUPPRESSION_CACHE_SECONDS = 0
    settings.ERASURE_SETTLE_SECONDS = 0


def _visit(site, hour, anon: str, lcp: float) -> None:
    view = event(hour + timedelta(minutes=5), anon=anon, url="https://shop.example/cart")
    props = {"pageview": view["id"], "lcp": lcp, "lcp_el": f"img.{anon}"}
    measured = event(
        hour + timedelta(minutes=6),
        kind="custom",
        name="$vitals",
        anon=anon,
        url=view["url"],
        props=props,
    )
    outcome = events_record(
        source=Source(site=site, received_at=hour + timedelta(minutes=7)),
        raw_events=[view, measured],
    )
    assert outcome.accepted == 2


def _lcp(site, granularity: str, bucket) -> tuple[list[int], dict[str, float]]:
    (stored,) = VITALS.read(site_id=site.id, granularity=granularity, buckets=[bucket])
    site_row, page_row = stored[0, vitals.SITE], stored[1, ("/cart", "", "", "")]
    return site_row.ratings["lcp"], {k: v[0] for k, v in page_row.elements["lcp"].items()}


def test_an_erased_visitors_vitals_leave_every_bucket(site):
    now = timezone.now().replace(microsecond=0)
    hour = timebuckets.floor(now - timedelta(hours=4), "hour")
    if hour.hour == 23:
        hour -= timedelta(hours=1)
    _visit(site, hour, "alice-anon", 5200.0)
    _visit(site, hour, "bob-anon", 1200.0)
    day, month = timebuckets.floor(hour, "day"), timebuckets.floor(hour, "month")
    assert seal.bucket_seal(site_id=site.id, hour=hour, now=now)
    assert seal.bucket_rollup(site_id=site.id, granularity="day", bucket=day, now=now)
    assert seal.bucket_rollup(site_id=site.id, granularity="month", bucket=month, now=now)
    for granularity, bucket in (("hour", hour), ("day", day), ("month", month)):
        assert _lcp(site, granularity, bucket) == (
            [1, 0, 1],
            {"img.alice-anon": 1, "img.bob-anon": 1},
        )
    root = User.objects.create_superuser("root", password="pw-root-123")
    kind = ErasureRequest.ANONYMOUS_ID
    request = erasures.erasure_request(site=site, key="alice-anon", kind=kind, requested_by=root)
    tasks.erase_user.apply(args=[str(request.pk)]).get()
    for granularity, bucket in (("hour", hour), ("day", day), ("month", month)):
        assert _lcp(site, granularity, bucket) == ([1, 0, 0], {"img.bob-anon": 1}), granularity
