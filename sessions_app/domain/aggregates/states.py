"""Bucket states (open, sealed, reopened): which buckets are due, and reopening them to reseal."""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Case, F, PositiveIntegerField, Q, Value, When
from django.db.models.functions import Greatest

from sessions_app.domain.aggregates import seal
from sessions_app.domain.aggregates.seal import ROLLUP_CHAIN
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import (
    BucketState,
    Site,
)

_known_open: dict[tuple[object, datetime], int] = {}  # (site, hour) -> shards recorded

log = logging.getLogger(__name__)


def bucket_states_touch(
    *, site: Site, hours: dict[datetime, tuple[int, int]], reopen: Iterable[datetime] = ()
) -> None:
    """Record that events arrived for these hour buckets ({hour: (late events, shards)}).

    A new bucket becomes `open` with the shards the batch used; a batch that used
    more shards raises the count (never lowers it). Both are cached per process.
    Late events for a sealed bucket reopen it and are counted, so the sweep reseals it;
    `reopen` hours (ingest.plan.hours_after) are reopened without a count, and sealed
    from their raw rows from then on.
    """
    for hour, (_, shards) in hours.items():
        key = (site.id, hour)
        if _known_open.get(key, 0) < shards:
            state, created = BucketState.objects.get_or_create(
                site=site, granularity="hour", bucket=hour, defaults={"shards": shards}
            )
            if not created and state.shards < shards:
                BucketState.objects.filter(pk=state.pk).update(shards=Greatest(F("shards"), shards))
            _known_open[key] = max(shards, state.shards)
    if reopen:
        # Their tallies hold the sessions' starts and sources as ingest knew them before
        # this plan: they seal from their raw rows (paths read those afresh).
        BucketState.objects.filter(site=site, granularity="hour", bucket__in=set(reopen)).update(
            partials=False
        )
    late = {hour: n for hour, (n, _) in hours.items() if n}
    # Hours changed without a write get no late count.
    _reopen_chains(site.id, {**dict.fromkeys(set(reopen) - set(hours), 0), **late})


def _reopen_chains(site_id: uuid.UUID, late_by_hour: dict[datetime, int]) -> None:
    """The hours and the days and months built from them all change: a new version (a
    seal running now cannot mark them sealed), a sealed one is reopened for the sweep,
    and each counts the late events of its hours.

    One UPDATE for the whole chain of every hour: a late batch runs this twice on the
    collector's request (when it is recorded and when it is applied), and six statements
    an hour cost it more than writing its rows.
    """
    late: Counter[tuple[str, datetime]] = Counter()
    for hour, n in late_by_hour.items():
        for granularity in ROLLUP_CHAIN:
            late[granularity, timebuckets.floor(hour, granularity)] += n
    if not late:
        return
    which = Q()
    for granularity, start in late:
        which |= Q(granularity=granularity, bucket=start)
    counts = [
        When(Q(granularity=granularity, bucket=start), then=F("late_events") + n)
        for (granularity, start), n in late.items()
        if n
    ]
    changes: dict[str, Any] = {
        "version": F("version") + 1,
        "state": Case(
            When(state=BucketState.SEALED, then=Value(BucketState.REOPENED)), default=F("state")
        ),
    }
    if counts:
        changes["late_events"] = Case(
            *counts, default=F("late_events"), output_field=PositiveIntegerField()
        )
    BucketState.objects.filter(which, site_id=site_id).update(**changes)


def buckets_applied_late(*, site_id: uuid.UUID, hours: Iterable[datetime]) -> None:
    """Reopen the hours a write landed in after their sealing time.

    An event that was not late when the collector took it can still be written after its
    hour's seal read the raw rows (a queue or a replay in between). Its hour, day and
    month get a new version, so a seal running now does not mark them sealed, and a
    sealed one is reopened for the sweep to reseal.
    """
    now = datetime.now(UTC)
    late = [
        h
        for h in set(hours)
        if timebuckets.next_start(h, "hour") + settings.ALLOWED_LATENESS <= now
    ]
    _reopen_chains(site_id, dict.fromkeys(late, 0))


def _unsealed_inside(site_id: uuid.UUID, granularity: str, start: datetime, end: datetime) -> bool:
    """Whether any bucket finer than `granularity` in [start, end) is open or reopened.

    Every finer level counts, not only the children: a day gets its state when its first
    hour is sealed, so a day whose hours are all still open has none, and a month that
    looked at its days alone was sealed without that day's events.
    """
    finer = ROLLUP_CHAIN[: ROLLUP_CHAIN.index(granularity)]
    return BucketState.objects.filter(
        site_id=site_id,
        granularity__in=finer,
        state__in=[BucketState.OPEN, BucketState.REOPENED],
        bucket__gte=start,
        bucket__lt=end,
    ).exists()


def buckets_due(
    *, now: datetime, limit: int = 500, site_id: uuid.UUID | None = None
) -> list[tuple[uuid.UUID, str, datetime]]:
    """Return (site id, granularity, bucket) of buckets ready to seal (of one site, if
    given).

    An hour is due once its end + ALLOWED_LATENESS has passed; a day or month once
    it has ended the same way and nothing finer inside it is still unsealed.
    """
    now = timebuckets.as_utc(now)
    unsealed = [BucketState.OPEN, BucketState.REOPENED]
    due: list[tuple[uuid.UUID, str, datetime]] = []
    states = BucketState.objects.all()
    if site_id is not None:
        states = states.filter(site_id=site_id)
    for granularity in ROLLUP_CHAIN:
        candidates = (
            states.filter(
                granularity=granularity,
                state__in=unsealed,
                bucket__lte=now - settings.ALLOWED_LATENESS - timedelta(hours=1),
            )
            .order_by("bucket")
            .values_list("site_id", "bucket")[:limit]
        )
        for owner, start in candidates:
            end = timebuckets.next_start(start, granularity)
            if end + settings.ALLOWED_LATENESS > now:
                continue
            if granularity != "hour" and _unsealed_inside(owner, granularity, start, end):
                continue
            due.append((owner, granularity, start))
    return due[:limit]


def buckets_reseal(
    *, site: Site, hours: set[datetime], now: datetime, progress: Callable[[str], None]
) -> Counter[str]:
    """Reopen the sealed hours, days and months holding these hours, then seal them again.

    Hours first (from the remaining raw rows), then the days and months above
    (from the resealed children). Reopening bumps each bucket's version, like a
    late event: a seal already running cannot mark its stale result sealed. A
    bucket that cannot be resealed now (a child still open) stays reopened for the
    sweep, as does one whose seal fails (a row no reader expects, the node busy). Return
    how many of each granularity were resealed, and deferred by a failed seal.
    """
    resealed: Counter[str] = Counter()
    starts = {g: sorted({timebuckets.floor(h, g) for h in hours}) for g in ROLLUP_CHAIN}
    for granularity, chosen in starts.items():
        states = BucketState.objects.filter(site=site, granularity=granularity, bucket__in=chosen)
        states.update(version=F("version") + 1)
        states.filter(state=BucketState.SEALED).update(state=BucketState.REOPENED)
    for granularity, chosen in starts.items():
        progress(f"resealing {len(chosen)} {granularity} buckets")
        for start in chosen:
            state = BucketState.objects.filter(
                site=site, granularity=granularity, bucket=start
            ).first()
            if state is None or state.state != BucketState.REOPENED:
                continue  # never sealed: its seal will read the remaining rows
            if granularity != "hour" and _unsealed_inside(
                site.id, granularity, start, timebuckets.next_start(start, granularity)
            ):
                continue
            try:
                done = _seal_again(site, granularity, start, now)
            except Exception:  # the bucket stays reopened: the sweep seals it later
                log.exception("reseal of %s %s failed; left to the sweep", granularity, start)
                resealed[f"{granularity}s_deferred"] += 1
                continue
            resealed[f"{granularity}s_resealed"] += int(done)
    return resealed


def _seal_again(site: Site, granularity: str, start: datetime, now: datetime) -> bool:
    if granularity == "hour":
        return seal.bucket_seal(site_id=site.id, hour=start, now=now)
    return seal.bucket_rollup(site_id=site.id, granularity=granularity, bucket=start, now=now)
