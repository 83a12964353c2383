"""Step buckets: open the hour buckets the batch wrote to in BucketState (SQL), raise
their recorded shard count, and reopen sealed hours that got late events (or whose
paths changed: an event before later ones of its session)."""

from __future__ import annotations

import logging
from datetime import datetime

from sessions_app.domain.aggregates.states import bucket_states_touch
from sessions_app.domain.ingest.plan import Plan, hours_after
from sessions_app.domain.ingest.rows import partial_shard
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import Site

log = logging.getLogger(__name__)


def buckets(site: Site, plan: Plan | None) -> None:
    """Record the plan's hours and shards in the bucket states."""
    if plan is not None:
        plan_buckets_touch(site=site, plan=plan)


def plan_buckets_touch(*, site: Site, plan: Plan) -> None:
    """Open the hour buckets a plan writes to (and the shards it uses); late events reopen
    sealed ones, and so does an event before later ones of its session (paths).

    Bookkeeping: a failure is logged, and the next batch for the hour records it again.
    """
    hours: dict[datetime, tuple[int, int]] = {}
    # The batch's tallies (bucket_partials) go to one shard of each of its hours.
    tallies = partial_shard(plan.batch_id, plan.shards) + 1
    for event in plan.events:
        hour = timebuckets.floor(event.ts, timebuckets.Width.HOUR)
        late, shards = hours.get(hour, (0, tallies))
        hours[hour] = (late + int(event.late), max(shards, event.shard + 1))
    try:
        bucket_states_touch(site=site, hours=hours, reopen=hours_after(plan))
    except Exception:
        log.exception("bucket states not updated for batch %s", plan.batch_id)
