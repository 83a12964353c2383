"""A cold funnel fans its days out to a real analysis worker, a few at a time; the result
fills in."""

from __future__ import annotations

import random
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.features.funnels import defs, queue, results
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import BucketState
from tests.support.funnels import STEP_POOL, brute, raw_rows, visitor
from tests.support.sealing import seal_everything


@pytest.mark.heavy
@pytest.mark.django_db(transaction=True, databases=["default", "cassandra"])
def test_cold_days_are_scanned_by_the_workers_and_fill_in(site, settings, celery_analysis_worker):
    settings.FUNNEL_INLINE_DAYS = 0
    settings.ANALYSIS_TASKS_PER_SITE = 2
    rng = random.Random(3)
    now = timezone.now().replace(microsecond=0)
    for i in range(20):
        start = now - timedelta(minutes=rng.randrange(6 * 60, 5 * 24 * 60))
        events_record(
            source=Source(site=site, received_at=now), raw_events=visitor(rng, f"w{i}", start)
        )
    seal_everything(site, timezone.now())
    start = timebuckets.floor(now - timedelta(days=5), "day")
    # Sealed days only, all of them cold: yesterday is left out because for
    # ALLOWED_LATENESS after midnight its last hour, and so the day, is not sealed yet.
    end = timebuckets.floor(now - timedelta(days=1), "day")
    definition = {"steps": [STEP_POOL[1], STEP_POOL[4]], "window": {"unit": "hours", "value": 2}}
    funnel = defs.funnel_create(site=site, name="worker", definition=definition)
    first = results.funnel_units(site=site, version=funnel.current, start=start, end=end)
    assert len(first.days_pending) >= 3 and first.days_cached == 0
    deadline, seen = time.monotonic() + 90, [len(first.days_pending)]
    result, most = first, queue.scans_in_flight(site_id=site.id)
    while result.days_pending and time.monotonic() < deadline:
        time.sleep(0.5)
        result = results.funnel_units(site=site, version=funnel.current, start=start, end=end)
        seen.append(len(result.days_pending))
        most = max(most, queue.scans_in_flight(site_id=site.id))
    assert result.days_pending == [], seen
    assert most == 2  # the cap, reached, never passed (asked again as the page refreshes)
    sealed = BucketState.objects.filter(
        site=site, granularity="day", state="sealed", bucket__gte=start, bucket__lt=end
    )
    assert result.days_cached == sealed.count() >= 3
    want = brute(raw_rows(site, start, end), funnel.current.definition, start, end)
    assert {u.key: u.level for u in result.units} == {k: len(c) for k, c in want.items()}
    assert want  # the days held visitors
