"""The shop the funnel tests count: visitors through /collect over four days, sealed,
then late events that reopen sealed days, sealed again."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.core import timebuckets
from sessions_app.models import BucketState
from tests.support.dataset import AGENTS
from tests.support.funnels import send, visitor
from tests.support.sealing import seal_everything


@pytest.fixture
def shop(client, site, settings):
    settings.FUNNEL_INLINE_DAYS = 100  # no worker here: every day is scanned in the request
    rng = random.Random(5)
    now = timezone.now().replace(microsecond=0)
    for i in range(45):
        start = now - timedelta(minutes=rng.randrange(60, 4 * 24 * 60))
        referrer = rng.choice([None, "https://www.google.com/", "https://twitter.com/x"])
        send(client, site, visitor(rng, f"u{i}", start), AGENTS[i % 5], referrer)
    send(client, site, visitor(rng, "bot", now - timedelta(hours=5)), "Googlebot/2.1")
    seal_everything(site, timezone.now())
    assert BucketState.objects.filter(site=site, granularity="day", state="sealed").count() >= 3
    for i in range(6):  # late events for sealed days: they reopen them
        send(
            client,
            site,
            visitor(rng, f"late{i}", now - timedelta(days=rng.randrange(1, 4))),
            AGENTS[0],
        )
    assert BucketState.objects.filter(site=site, granularity="day", state="reopened").exists()
    seal_everything(site, timezone.now())
    start = timebuckets.floor(now - timedelta(days=5), "day")
    end = timebuckets.next_start(timebuckets.floor(timezone.now(), "hour"), "hour")
    return start, end
