"""Goal backfills on the shared `analysis` queue: one at a time a goal, whatever the number
of saves; a site's backfills and funnel day scans together within its places there
(ANALYSIS_TASKS_PER_SITE), another site's not taken; a backfill over the cap, or lost,
still runs later and counts exactly. The broker is the real Redis; no worker takes the
queue here: the tests run its messages in turn, as the analysis worker would."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app import tasks
from sessions_app.domain.goals.defs import definition_clean, definition_digest
from sessions_app.domain.jobs import goal_backfill as goal_jobs
from sessions_app.domain.ledger import sites
from sessions_app.features.funnels import defs, queue, results
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import BucketState, Goal
from tests.support import goal_brute as brute
from tests.support.accounts import member
from tests.support.goals import assert_exact_buy, buyers

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

ANALYSIS, DEFAULT = "analysis", "celery"
BACKFILL, SCAN = "sessions_app.tasks.backfill_goal", "sessions_app.tasks.funnel_day"
FUNNEL = {"steps": [{"kind": "pageview", "path": "/"}, {"kind": "click", "selector": "a"}]}


@pytest.fixture
def places(site) -> Iterator[list[Any]]:
    """The sites whose claims are dropped after the test (the `site` fixture's, and any
    the test appends)."""
    used = [site]
    yield used
    for one in used:
        queue.scans_forget(site_id=one.id)


@pytest.fixture
def save(client, site, places, django_capture_on_commit_callbacks) -> Callable[..., int]:
    """Create (no `goal_id`) or change a goal through the API as one of the site's admins,
    its on-commit work done (its backfill sent, as in production); the goal's id."""
    admin = User.objects.create_user("adm", password="pw-adm-123")
    client.force_login(member(admin, site, "admin"))

    def saved(body: dict[str, Any], goal_id: int | None = None, of: Any = site) -> int:
        if of is not site:
            member(admin, of, "admin")
        base = f"/api/sites/{of.id}/goals"
        with django_capture_on_commit_callbacks(execute=True):
            if goal_id is None:
                response = client.post(base, body, content_type="application/json")
            else:
                response = client.put(f"{base}/{goal_id}", body, content_type="application/json")
        assert response.status_code in (200, 201), response.content
        return int(response.json()["id"])

    return saved


def _messages(broker: redis.Redis) -> list[tuple[str, list[Any]]]:
    """The tasks waiting on the analysis queue, oldest first: (name, args) (kombu's Redis
    messages: JSON, the body base64 JSON [args, kwargs, embed])."""
    return [_decoded(raw) for raw in reversed(broker.lrange(ANALYSIS, 0, -1))]


def _decoded(raw: bytes) -> tuple[str, list[Any]]:
    message = json.loads(raw)
    args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
    return message["headers"]["task"], args


def _run(raw: bytes) -> Any:
    """Run one message here, as the analysis worker would."""
    name, args = _decoded(raw)
    return getattr(tasks, name.rpartition(".")[2])(*args)


def _work(broker: redis.Redis, site: Any, between: Callable[[], Any] = lambda: None) -> int:
    """Be the analysis worker until the queue is empty (`between` each task: the funnel's
    page asking again); the most of the site's tasks seen queued or claimed at once."""
    most, deadline = queue.scans_in_flight(site_id=site.id), time.monotonic() + 120
    while (raw := broker.rpop(ANALYSIS)) is not None:
        assert time.monotonic() < deadline, "the queue never emptied"
        _run(raw)
        between()
        most = max(most, broker.llen(ANALYSIS), queue.scans_in_flight(site_id=site.id))
    return most


def _event(n: int) -> dict[str, Any]:
    return {"kind": "event", "name": f"e{n}"}


def _days(count: int) -> list[Any]:
    today = timebuckets.floor(timezone.now(), "day")
    return [today - timedelta(days=n) for n in range(count, 0, -1)]


def test_twenty_saves_of_a_goal_queue_one_backfill_which_counts_the_last_definition(
    client, site, broker, save
):
    buyers(client, site)
    goal_id = save({"name": "buy", "definition": {"kind": "click", "selector": "a.more"}})
    for n in range(20):  # new definitions, and the same one again, while one is queued
        save({"definition": brute.GOALS["buy"] if n == 19 else _event(n % 3)}, goal_id)
    assert [name for name, _ in _messages(broker)] == [BACKFILL]  # one, not 21
    assert queue.scans_in_flight(site_id=site.id) == 1
    _work(broker, site)
    goal = Goal.objects.get(pk=goal_id)
    assert goal.digest == definition_digest(definition_clean(brute.GOALS["buy"]))
    assert goal.backfill_state == Goal.DONE and goal.backfill_done == goal.backfill_total
    assert assert_exact_buy(site, goal) == 6
    assert queue.scans_in_flight(site_id=site.id) == 0  # its place given back


def test_a_running_backfill_whose_goal_changes_stops_and_one_for_the_change_follows(
    client, site, broker, save, monkeypatch
):
    buyers(client, site)
    goal_id = save({"name": "buy", "definition": {"kind": "click", "selector": "a.more"}})
    counted = []

    def hour(**kwargs: Any) -> Any:  # the goal is changed while its first hour is counted
        if not counted:
            save({"definition": brute.GOALS["buy"]}, goal_id)
            assert broker.llen(ANALYSIS) == 0  # the running backfill holds the goal's place
        counted.append(kwargs["start"])
        return real_hour(**kwargs)

    real_hour = goal_jobs.Hour
    monkeypatch.setattr(goal_jobs, "Hour", hour)
    assert _run(broker.rpop(ANALYSIS)) == {}  # stopped, its work of no use
    assert len(counted) == 1  # after the hour it was counting
    assert [name for name, _ in _messages(broker)] == [BACKFILL]  # the changed goal's, sent
    monkeypatch.undo()
    _work(broker, site)
    goal = Goal.objects.get(pk=goal_id)
    assert goal.backfill_state == Goal.DONE and assert_exact_buy(site, goal) == 6


def test_backfills_and_funnel_scans_of_a_site_together_stay_within_its_cap(
    site, broker, save, settings
):
    settings.ANALYSIS_TASKS_PER_SITE, settings.FUNNEL_INLINE_DAYS = 3, 0
    goal_ids = [save({"name": f"g{n}", "definition": _event(n)}) for n in range(2)]
    version = defs.funnel_create(site=site, name="f", definition=FUNNEL).current
    days = _days(4)
    for day in days:  # sealed (and empty): a scan each
        BucketState.objects.create(
            site=site, granularity="day", bucket=day, state=BucketState.SEALED, version=1
        )

    def ask() -> Any:  # the funnel's page, asking for its result again
        end = timebuckets.next_start(days[-1], "day")
        return results.funnel_units(site=site, version=version, start=days[0], end=end)

    assert len(ask().days_pending) == 4  # one of them queued: one place left
    goal_ids.append(save({"name": "g2", "definition": _event(2)}))
    assert [name for name, _ in _messages(broker)] == [BACKFILL, BACKFILL, SCAN]
    assert queue.scans_in_flight(site_id=site.id) == 3
    assert Goal.objects.get(pk=goal_ids[2]).backfill_state == Goal.QUEUED  # waits, not lost
    assert _work(broker, site, between=ask) == 3  # never more, and every task run in the end
    assert set(Goal.objects.filter(pk__in=goal_ids).values_list("backfill_state", flat=True)) == {
        Goal.DONE
    }
    assert ask().days_pending == [] and queue.scans_in_flight(site_id=site.id) == 0


def test_a_full_site_does_not_block_another_sites_backfill(site, broker, save, settings, places):
    settings.ANALYSIS_TASKS_PER_SITE = 2
    version = defs.funnel_create(site=site, name="f", definition=FUNNEL).current
    queue.fan_out(site_id=site.id, version_id=version.pk, digest=version.digest, days=_days(3))
    waiting = save({"name": "g", "definition": _event(1)})
    assert [name for name, _ in _messages(broker)] == [SCAN, SCAN]  # the site is full
    other = sites.site_create(name="Other", origins=[])
    places.append(other)
    theirs = save({"name": "g", "definition": _event(1)}, of=other)
    assert [args for _, args in _messages(broker)][-1][:2] == [theirs, str(other.id)]
    assert queue.scans_in_flight(site_id=other.id) == 1
    assert Goal.objects.get(pk=waiting).backfill_state == Goal.QUEUED


def test_a_backfill_over_the_cap_runs_when_a_place_frees_and_counts_exactly(
    client, site, broker, save, settings
):
    settings.ANALYSIS_TASKS_PER_SITE = 1
    buyers(client, site)
    version = defs.funnel_create(site=site, name="f", definition=FUNNEL).current
    queue.fan_out(site_id=site.id, version_id=version.pk, digest=version.digest, days=_days(1))
    goal_id = save({"name": "buy", "definition": brute.GOALS["buy"]})
    assert [name for name, _ in _messages(broker)] == [SCAN]  # the backfill waits its turn
    _run(broker.rpop(ANALYSIS))  # the scan ends: its place goes to the waiting backfill
    assert [name for name, _ in _messages(broker)] == [BACKFILL]
    _work(broker, site)
    goal = Goal.objects.get(pk=goal_id)
    assert goal.backfill_state == Goal.DONE and assert_exact_buy(site, goal) == 6


def test_a_lost_backfill_is_sent_again_once_its_claim_lapses_and_the_lost_one_does_nothing(
    site, broker, save, settings
):
    settings.ANALYSIS_TASK_TTL = 1
    goal_id = save({"name": "g", "definition": _event(1)})
    lost = broker.rpop(ANALYSIS)  # a Redis flush, a killed worker: the claim lapses
    assert tasks.resume_goal_backfills() == 0  # not while the claim holds
    deadline = time.monotonic() + 10
    while queue.scans_in_flight(site_id=site.id) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert queue.scans_in_flight(site_id=site.id) == 0
    settings.ANALYSIS_TASK_TTL = 600
    assert tasks.resume_goal_backfills() == 1  # the beat sends it again
    assert _run(lost) == {}  # the lost one comes back after all: its claim is not its own
    assert Goal.objects.get(pk=goal_id).backfill_state == Goal.QUEUED
    assert queue.scans_in_flight(site_id=site.id) == 1  # the new one's place kept
    _work(broker, site)
    assert Goal.objects.get(pk=goal_id).backfill_state == Goal.DONE


def test_saving_a_failed_goal_again_retries_its_backfill(site, broker, save):
    """docs/goals.md: a failed backfill says so; saving the goal again retries. A done
    one saved with the same definition queues nothing."""
    goal_id = save({"name": "buy", "definition": brute.GOALS["buy"]})
    _work(broker, site)
    save({"definition": brute.GOALS["buy"]}, goal_id)
    assert _messages(broker) == []
    Goal.objects.filter(pk=goal_id).update(backfill_state=Goal.FAILED)
    save({"definition": brute.GOALS["buy"]}, goal_id)
    assert [name for name, _ in _messages(broker)] == [BACKFILL]
    _work(broker, site)
    assert Goal.objects.get(pk=goal_id).backfill_state == Goal.DONE
