"""Goal conversions: six buyers sent and sealed, and the "buy" goal's stored counts
checked against the brute force (tests/support/goal_brute.py) of the raw rows."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from sessions_app.domain.aggregates import sources
from sessions_app.domain.aggregates.goal_counts import TOTAL
from sessions_app.domain.aggregates.products import GOALS
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import BucketState, Goal
from tests.support import goal_brute as brute
from tests.support.clock import recent_fixed
from tests.support.dataset import AGENTS, SHOP
from tests.support.events import event
from tests.support.paths import send
from tests.support.sealing import seal_everything


def buyers(client: Any, site: Any) -> Any:
    """Six visitors clicked buy over three hours of the day before yesterday (a day that is
    due for its rollup whatever the time: yesterday is not, just after midnight), sent and
    sealed."""
    start = recent_fixed(days_ago=2, at=timedelta(hours=5, minutes=7))
    for n in range(6):
        ts = start + timedelta(hours=n % 3, minutes=n)
        send(
            client,
            site,
            [
                event(ts, anon=f"u{n}", url=SHOP + "/pricing"),
                event(
                    ts + timedelta(seconds=5),
                    kind="click",
                    anon=f"u{n}",
                    url=SHOP + "/pricing",
                    element={"tag": "button", "selector": "button#buy", "text": "Buy now"},
                ),
            ],
            AGENTS[n % 5],
        )
    seal_everything(site, timezone.now())
    return site


def assert_exact_buy(site: Any, goal: Goal) -> int:
    found = 0
    for state in BucketState.objects.filter(site=site, granularity="hour"):
        hour = timebuckets.as_utc(state.bucket)
        rows = list(
            sources.site_bucket_funnel_rows(site_id=site.id, hour=hour, shards=state.shards)
        )
        want = sum(1 for r in rows if brute.matches(brute.GOALS["buy"], r) and not r["is_bot"])
        [stored] = GOALS.read(site_id=site.id, granularity="hour", buckets=[hour])
        assert stored[(goal.digest, *TOTAL)].conversions == want
        found += want
    day = timebuckets.floor(timebuckets.as_utc(state.bucket), "day")
    [whole] = GOALS.read(site_id=site.id, granularity="day", buckets=[day])
    assert whole[(goal.digest, *TOTAL)].users == 6
    return found
