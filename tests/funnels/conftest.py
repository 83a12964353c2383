"""The shop the funnel tests count: visitors through /collect over four days, sealed,
then late events that reopen sealed days, sealed again."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from sessions_app.core import timebuckets
from sessions_app.models import BucketState
from tests.aggregates.test_breakdowns import seal_everything
from tests.analysis.dataset import AGENTS, SHOP
from tests.support.events import event, post

PRODUCTS = [f"/product/{i}" for i in range(1, 6)]


def visitor(rng: random.Random, anon: str, start: datetime) -> list[dict[str, Any]]:
    """1-3 sessions (45 minutes to 5 hours apart) of shop browsing."""
    events, ts = [], start
    for _ in range(rng.randrange(1, 4)):
        for _ in range(rng.randrange(1, 9)):
            choice = rng.random()
            if choice < 0.45:
                path = rng.choice(["/", *PRODUCTS, "/cart", "/checkout"])
                events.append(event(ts, anon=anon, url=SHOP + path))
            elif choice < 0.7:
                element = {"selector": rng.choice(["button.add", "a.more"]), "tag": "button",
                           "text": rng.choice(["Add to cart", "More"])}  # fmt: skip
                events.append(event(ts, kind="click", anon=anon, url=SHOP + "/product/1",
                                    element=element))  # fmt: skip
            else:
                events.append(event(ts, kind="custom", anon=anon, name="checkout",
                                    props={"plan": rng.choice(["pro", "free"])}))  # fmt: skip
            ts += timedelta(minutes=rng.randrange(1, 20))
        ts += timedelta(minutes=rng.randrange(45, 300))
    return events


def send(client, site, events: list[dict[str, Any]], agent: str, referrer: str | None = None):
    if referrer:
        events[0] = {**events[0], "referrer": referrer}
    response = post(client, site, events, HTTP_USER_AGENT=agent, REMOTE_ADDR="8.8.8.8")
    assert response.status_code == 200 and response.json()["accepted"] == len(events), (
        response.content
    )


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
