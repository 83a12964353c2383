"""Funnel day scans go to the analysis queue, at most ANALYSIS_TASKS_PER_SITE of a site at
once; only a funnel's current version is scanned, and a funnel keeps 20 versions."""

from __future__ import annotations

import base64
import json
import time
from datetime import timedelta

import pytest
import redis
from django.utils import timezone

from clickstream.celery import app
from sessions_app import tasks
from sessions_app.domain.ledger import sites
from sessions_app.features.funnels import defs, queue, results
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import BucketState

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

DEFINITION = {"steps": [{"kind": "pageview", "path": "/"}, {"kind": "click", "selector": "a"}]}
ANALYSIS, DEFAULT = "analysis", "celery"


def _queued(broker: redis.Redis, name: str = ANALYSIS) -> list[list]:
    """The args of the tasks waiting on a queue, oldest first (kombu's Redis messages:
    JSON, the body base64 JSON [args, kwargs, embed])."""
    found = []
    for raw in reversed(broker.lrange(name, 0, -1)):
        args, _kwargs, _embed = json.loads(base64.b64decode(json.loads(raw)["body"]))
        found.append(args)
    return found


def _sealed_days(site, count: int) -> tuple:
    """`count` sealed days before today (their state only: every day is cold)."""
    today = timebuckets.floor(timezone.now(), "day")
    days = [today - timedelta(days=n) for n in range(count, 0, -1)]
    for day in days:
        BucketState.objects.create(
            site=site, granularity="day", bucket=day, state=BucketState.SEALED, version=1
        )
    return days[0], today


def test_a_site_has_at_most_its_cap_of_scans_queued(site, settings, broker):
    settings.FUNNEL_INLINE_DAYS, settings.ANALYSIS_TASKS_PER_SITE = 0, 3
    start, end = _sealed_days(site, 10)
    funnel = defs.funnel_create(site=site, name="capped", definition=DEFINITION)
    try:
        ask = lambda: results.funnel_units(  # noqa: E731 - the page asking again
            site=site, version=funnel.current, start=start, end=end
        )
        first = ask()
        assert len(first.days_pending) == 10  # all pending, three of them queued
        queued = _queued(broker)
        assert len(queued) == 3 and broker.llen(DEFAULT) == 0  # none on the default queue
        assert {q[1] for q in queued} == {funnel.current.pk}
        assert queue.scans_in_flight(site_id=site.id) == 3
        ask()
        assert broker.llen(ANALYSIS) == 3  # asked again: nothing more while none finished
        # Another site has places of its own.
        other = sites.site_create(name="Other", origins=[])
        o_start, o_end = _sealed_days(other, 4)
        o_funnel = defs.funnel_create(site=other, name="o", definition=DEFINITION)
        results.funnel_units(site=other, version=o_funnel.current, start=o_start, end=o_end)
        assert broker.llen(ANALYSIS) == 6
        # A worker finishes the oldest scan: the next ask queues one more day, not two.
        site_id, version_id, day, digest = queued[0]
        assert tasks.funnel_day(site_id, version_id, day, digest) == 0  # an empty day
        assert queue.scans_in_flight(site_id=site.id) == 2
        ask()
        now_queued = [q for q in _queued(broker) if q[0] == str(site.id)]
        assert len(now_queued) == 4 and queue.scans_in_flight(site_id=site.id) == 3
        assert now_queued[-1][2] not in {q[2] for q in queued}  # a day not queued before
    finally:
        queue.scans_forget(site_id=site.id)


def test_a_lost_scan_gives_its_place_back_after_the_ttl(site, settings, broker):
    settings.ANALYSIS_TASKS_PER_SITE, settings.ANALYSIS_TASK_TTL = 1, 1
    funnel = defs.funnel_create(site=site, name="lost", definition=DEFINITION)
    today = timebuckets.floor(timezone.now(), "day")
    days = [today - timedelta(days=2), today - timedelta(days=1)]
    version = funnel.current
    args = {"site_id": site.id, "version_id": version.pk, "digest": version.digest}
    try:
        assert queue.fan_out(**args, days=days) == 1
        assert queue.fan_out(**args, days=days) == 0  # full
        broker.delete(ANALYSIS)  # the task is lost (a Redis flush): its place lapses
        time.sleep(1.2)
        assert queue.scans_in_flight(site_id=site.id) == 0
        assert queue.fan_out(**args, days=days) == 1
    finally:
        queue.scans_forget(site_id=site.id)


def test_a_scan_of_an_edited_away_version_is_dropped(site, settings, broker):
    settings.ANALYSIS_TASKS_PER_SITE = 5
    funnel = defs.funnel_create(site=site, name="edited", definition=DEFINITION)
    old = funnel.current
    day = timebuckets.floor(timezone.now(), "day") - timedelta(days=1)
    try:
        queue.fan_out(site_id=site.id, version_id=old.pk, digest=old.digest, days=[day])
        defs.funnel_update(funnel=funnel, definition={**DEFINITION, "count_by": "session"})
        [queued] = _queued(broker)
        assert defs.version_current(old.pk) is None
        assert tasks.funnel_day(*queued) == 0  # not scanned
        assert queue.scans_in_flight(site_id=site.id) == 0  # its place given back
    finally:
        queue.scans_forget(site_id=site.id)


def test_a_funnel_keeps_its_twenty_newest_versions(site):
    funnel = defs.funnel_create(site=site, name="busy", definition=DEFINITION)
    for hours in range(1, 26):
        defs.funnel_update(
            funnel=funnel, definition={**DEFINITION, "window": {"unit": "hours", "value": hours}}
        )
    numbers = sorted(funnel.versions.values_list("number", flat=True))
    assert numbers == list(range(7, 27)) and funnel.current.number == 26
    assert len(numbers) == defs.MAX_VERSIONS


def test_only_funnel_scans_are_routed_to_the_analysis_queue():
    route = app.amqp.router.route
    assert route({}, "sessions_app.tasks.funnel_day")["queue"].name == ANALYSIS
    for name in ("seal_bucket", "erase_user", "pipeline_heartbeat", "purge_expired_partitions"):
        assert route({}, f"sessions_app.tasks.{name}")["queue"].name == DEFAULT
