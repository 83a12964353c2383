"""Goals kept: a site's goals saved and deleted, and a new or changed goal's backfill.

Saving a goal whose definition is new (`digest`) makes it exact from the current hour on
(every hour sealed from now on counts it, and unsealed hours are counted live) and queues
its backfill: every sealed hour whose raw rows are still kept is counted again for the
site's goals (the goals product, and the user sets that hold each goal's users for the
cohorts: `BACKFILLED`), then the days and months above them are merged again.
Progress is kept on the goal; when done, `exact_from` is the first hour whose raw rows
were all still there.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction

from sessions_app.aggregates.products import GOALS, USER_SETS, Product
from sessions_app.aggregates.seal import CHILD, aggregate_ttl
from sessions_app.aggregates.sources import Hour
from sessions_app.core import timebuckets
from sessions_app.core.bounds import RangeError
from sessions_app.goals.defs import MAX_GOALS, definition_clean, definition_digest
from sessions_app.ledger import policies
from sessions_app.models import BucketState, Goal, Site
from sessions_app.tables import retention_specs

PROGRESS_EVERY = 24  # buckets between two progress writes


def goal_save(
    *, site: Site, name: Any, definition: Any, now: datetime, goal: Goal | None = None
) -> Goal:
    """Create a goal of the site (or change `goal`); RangeError naming the bad field.

    A new definition is exact from this hour on and its backfill is queued (the caller
    enqueues the job once the transaction commits, `backfill_due`)."""
    name = name.strip() if isinstance(name, str) else ""
    if not name:
        raise RangeError("name", "give the goal a name")
    if len(name) > 100:
        raise RangeError("name", "at most 100 characters")
    clean = definition_clean(definition)
    digest = definition_digest(clean)
    if goal is None:
        if Goal.objects.filter(site=site).count() >= MAX_GOALS:
            raise RangeError("name", f"a site has at most {MAX_GOALS} goals")
        goal = Goal(site=site)
    changed = goal.pk is None or goal.digest != digest
    goal.name, goal.definition, goal.digest = name, clean, digest
    if changed:
        goal.exact_from = timebuckets.floor(now, "hour")
        goal.backfill_state, goal.backfill_done, goal.backfill_total = Goal.QUEUED, 0, 0
    try:
        with transaction.atomic():
            goal.save()
    except IntegrityError:
        raise RangeError("name", f"the site has a goal named {name!r} already") from None
    return goal


# What a goal's backfill counts again: its counts, and the user sets (cohorts by goal).
BACKFILLED: tuple[Product, ...] = (GOALS, USER_SETS)


def backfill_due(goal: Goal) -> bool:
    return goal.backfill_state == Goal.QUEUED


def goal_delete(goal: Goal) -> None:
    """Delete a goal (its stored counts are no longer read; the next seals drop them)."""
    goal.delete()


def kept_since(now: datetime) -> datetime:
    """The first hour whose raw rows are all still kept."""
    ttl = policies.ttl_seconds(retention_specs.RAW_EVENTS)
    return timebuckets.ceil(now - timedelta(seconds=ttl), "hour")


def goal_backfill(*, goal_id: int, now: datetime) -> dict[str, int]:
    """Count the site's goals again in every sealed hour whose raw rows are kept, then
    merge the days and months above them again; progress on the goal as it goes (a
    failure marks it failed and is raised). Nothing for a goal deleted meanwhile."""
    goal = Goal.objects.select_related("site").filter(pk=goal_id).first()
    if goal is None:
        return {}
    try:
        return _backfill(goal, now)
    except Exception:
        Goal.objects.filter(pk=goal_id).update(backfill_state=Goal.FAILED)
        raise


def _backfill(goal: Goal, now: datetime) -> dict[str, int]:
    site, since = goal.site, kept_since(now)
    sealed = BucketState.objects.filter(site=site, state=BucketState.SEALED)
    hours = sorted(
        (timebuckets.as_utc(b), n)
        for b, n in sealed.filter(granularity="hour", bucket__gte=since).values_list(
            "bucket", "shards"
        )
    )
    above = {
        g: sorted(
            timebuckets.as_utc(b)
            for b in sealed.filter(
                granularity=g, bucket__in={timebuckets.floor(h, g) for h, _ in hours}
            ).values_list("bucket", flat=True)
        )
        for g in ("day", "month")
    }
    total = len(hours) + len(above["day"]) + len(above["month"])
    Goal.objects.filter(pk=goal.pk).update(
        backfill_state=Goal.RUNNING, backfill_done=0, backfill_total=total
    )
    step = _progress(goal.pk)
    for hour, shards in hours:
        source = Hour(site_id=site.id, start=hour, shards=shards)
        for product in BACKFILLED:  # the user sets' "goal:<id>" sets from the goals' count
            value, ttl = product.hour(source), aggregate_ttl("hour")
            product.write(site_id=site.id, granularity="hour", bucket=hour, value=value, ttl=ttl,
                          now=now)  # fmt: skip
        step()
    for granularity in ("day", "month"):
        for bucket in above[granularity]:
            _rollup(site, granularity, bucket, now)
            step()
    Goal.objects.filter(pk=goal.pk, digest=goal.digest).update(
        backfill_state=Goal.DONE, backfill_done=total, exact_from=since
    )
    return {"hours": len(hours), "days": len(above["day"]), "months": len(above["month"])}


def _rollup(site: Site, granularity: str, bucket: datetime, now: datetime) -> None:
    children = timebuckets.buckets_between(
        bucket, timebuckets.next_start(bucket, granularity), CHILD[granularity]
    )
    for product in BACKFILLED:
        found = product.read(site_id=site.id, granularity=CHILD[granularity], buckets=children)
        product.write(site_id=site.id, granularity=granularity, bucket=bucket,
                      value=product.merge(found, start=bucket), ttl=aggregate_ttl(granularity),
                      now=now)  # fmt: skip


def _progress(goal_id: int) -> Callable[[], None]:
    done = 0

    def step() -> None:
        nonlocal done
        done += 1
        if done % PROGRESS_EVERY == 0:
            Goal.objects.filter(pk=goal_id).update(backfill_done=done)

    return step
