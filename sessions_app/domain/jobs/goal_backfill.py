"""Goals kept: a site's goals saved and deleted, and a new or changed goal's backfill.

Saving a goal whose definition is new (`digest`) makes it exact from the current hour on
(every hour sealed from now on counts it, and unsealed hours are counted live) and queues
its backfill: every sealed hour whose raw rows are still kept is counted again for the
site's goals (the goals product, and the user sets that hold each goal's users for the
cohorts: `BACKFILLED`), then the days and months above them are merged again.
Progress is kept on the goal; when done, `exact_from` is the first hour whose raw rows
were all still there.

A goal has at most one backfill queued or running, and it holds one of its site's places
on the analysis queue (domain/jobs/analysis_queue.py, shared with funnel day scans): saving the
goal again while one is queued sends nothing (the queued one counts the goal as it is
when it starts); a running one whose goal changes stops at its next progress write, and
the goal, queued again, is sent once its place is free. A backfill that finds no place
stays queued; it is sent when one of the site's analysis tasks ends, or by the beat
(`backfills_resume`), which also sends again a backfill whose claim lapsed (a lost task).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import IntegrityError, transaction

from sessions_app.domain.aggregates.product import Product
from sessions_app.domain.aggregates.products import GOALS, USER_SETS
from sessions_app.domain.aggregates.seal import CHILD, aggregate_ttl
from sessions_app.domain.aggregates.sources import Hour
from sessions_app.domain.goals.defs import (
    MAX_GOALS,
    definition_clean,
    definition_digest,
    recent_forget,
)
from sessions_app.domain.jobs import analysis_queue
from sessions_app.domain.ledger import policies
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import BucketState, Goal, Site
from sessions_app.foundation.tables import retention_specs

PROGRESS_EVERY = 24  # buckets between two progress writes
TASK = "sessions_app.tasks.backfill_goal"  # by name: the tasks module imports the jobs


def goal_save(
    *, site: Site, name: Any, definition: Any, now: datetime, goal: Goal | None = None
) -> Goal:
    """Create a goal of the site (or change `goal`); RangeError naming the bad field.

    A new definition is exact from this hour on and its backfill is queued (the caller
    sends it once the transaction commits: `backfill_due`, `backfill_queue`)."""
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
    if changed or goal.backfill_state == Goal.FAILED:  # saving a failed goal again retries
        goal.backfill_state, goal.backfill_done, goal.backfill_total = Goal.QUEUED, 0, 0
    try:
        with transaction.atomic():
            goal.save()
    except IntegrityError:
        raise RangeError("name", f"the site has a goal named {name!r} already") from None
    recent_forget(site.pk)
    return goal


# What a goal's backfill counts again: its counts, and the user sets (cohorts by goal).
BACKFILLED: tuple[Product[Any], ...] = (GOALS, USER_SETS)


def backfill_due(goal: Goal) -> bool:
    return goal.backfill_state == Goal.QUEUED


def _owner(goal_id: int) -> str:
    return f"goal:{goal_id}"


def backfill_queue(goal: Goal) -> bool:
    """Send the goal's backfill to the analysis queue, unless one is queued or running for
    it already or its site has no place left there (the goal stays queued: a freed place
    or the beat sends it); True if sent."""
    claim = analysis_queue.claim_one(
        site_id=goal.site_id, owner=_owner(goal.pk), ttl=settings.ANALYSIS_TASK_TTL
    )
    if claim is None:
        return False
    current_app.send_task(TASK, args=[goal.pk, str(goal.site_id), claim])
    return True


def backfills_resume(*, site_id: Any = None) -> int:
    """Send the backfills of one site (or every site) that wait, while places are left:
    queued ones, and running ones whose task was lost (its claim lapsed); how many sent."""
    waiting = Goal.objects.filter(backfill_state__in=(Goal.QUEUED, Goal.RUNNING))
    if site_id is not None:
        waiting = waiting.filter(site_id=site_id)
    return sum(backfill_queue(goal) for goal in waiting.order_by("updated_at", "pk"))


def goal_delete(goal: Goal) -> None:
    """Delete a goal (its stored counts are no longer read; the next seals drop them)."""
    goal.delete()
    recent_forget(goal.site_id)


def kept_since(now: datetime) -> datetime:
    """The first hour whose raw rows are all still kept."""
    ttl = policies.ttl_seconds(retention_specs.RAW_EVENTS)
    return timebuckets.ceil(now - timedelta(seconds=ttl), "hour")


class _Superseded(Exception):
    """The goal changed or was deleted under its backfill, or the backfill's claim lapsed."""


def goal_backfill(
    *, goal_id: int, now: datetime, site_id: str | None = None, claim: str | None = None
) -> dict[str, int]:
    """Count the site's goals again in every sealed hour whose raw rows are kept, then
    merge the days and months above them again; progress on the goal as it goes (a
    failure marks it failed and is raised). Nothing for a goal deleted meanwhile.

    A backfill sent by `backfill_queue` holds `claim` among its site's places: it renews
    it at every bucket and stops if it lapsed, stops if the goal changes, and gives its
    place back when it ends (then the site's waiting backfills are sent)."""
    goal = Goal.objects.select_related("site").filter(pk=goal_id).first()
    keep = _keeper(site_id, claim)
    try:
        if goal is None or not keep():
            return {}
        return _backfill(goal, now, keep)
    except _Superseded:
        return {}
    except Exception:
        Goal.objects.filter(pk=goal_id, digest=goal.digest if goal else "").update(
            backfill_state=Goal.FAILED
        )
        raise
    finally:
        if site_id is not None and claim is not None:
            analysis_queue.release(site_id=site_id, member=claim)
            backfills_resume(site_id=site_id)


def _keeper(site_id: str | None, claim: str | None) -> Callable[[], bool]:
    """Renew the claim for ANALYSIS_TASK_TTL more seconds; False once it has lapsed."""
    if site_id is None or claim is None:  # run by hand (a test, a shell): no place held
        return lambda: True
    return lambda: analysis_queue.renew(
        site_id=site_id, member=claim, ttl=settings.ANALYSIS_TASK_TTL
    )


def _backfill(goal: Goal, now: datetime, keep: Callable[[], bool]) -> dict[str, int]:
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
    mine = Goal.objects.filter(pk=goal.pk, digest=goal.digest)
    if not mine.update(backfill_state=Goal.RUNNING, backfill_done=0, backfill_total=total):
        raise _Superseded
    step = _progress(goal.pk, goal.digest, keep)
    for hour, shards in hours:
        source = Hour(site_id=site.id, start=hour, shards=shards)
        for product in BACKFILLED:  # the user sets' "goal:<id>" sets from the goals' count
            value, ttl = product.hour(source), aggregate_ttl("hour")
            product.write(
                site_id=site.id, granularity="hour", bucket=hour, value=value, ttl=ttl, now=now
            )
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
        product.write(
            site_id=site.id,
            granularity=granularity,
            bucket=bucket,
            value=product.merge(found, start=bucket),
            ttl=aggregate_ttl(granularity),
            now=now,
        )


def _progress(goal_id: int, digest: str, keep: Callable[[], bool]) -> Callable[[], None]:
    """A bucket done: renew the claim, the progress on the goal every PROGRESS_EVERY.
    _Superseded if the claim lapsed or the goal's definition changed (or it was deleted):
    a newer backfill counts it, this one's work is of no use."""
    done = 0

    def step() -> None:
        nonlocal done
        done += 1
        mine = Goal.objects.filter(pk=goal_id, digest=digest)
        if done % PROGRESS_EVERY == 0:
            current = bool(mine.update(backfill_done=done))
        else:
            current = mine.exists()
        if not (current and keep()):
            raise _Superseded

    return step
