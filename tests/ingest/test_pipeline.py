"""The write path as named steps (domain/ingest/pipeline.py): their list, their order, their
timings."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from bench import profile
from sessions_app.domain.ingest import pipeline
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ingest.state import state_key
from sessions_app.foundation.core.redis_client import redis_client
from sessions_app.foundation.tables import user_sessions
from tests.support.events import event, minutes

STEPS = ["validate", "dedupe", "enrich", "sessionize", "plan", "log", "queue", "buckets", "apply"]


def test_the_steps_are_in_order_each_a_function_named_as_its_own_module() -> None:
    assert [step.__name__ for step in pipeline.STEPS] == STEPS
    for step in pipeline.STEPS:
        module = importlib.import_module(f"sessions_app.domain.ingest.steps.{step.__name__}")
        assert step.__module__ == module.__name__ and getattr(module, step.__name__) is step


def test_make_profile_reports_the_same_steps_in_the_same_order() -> None:
    assert list(profile.STEP_NAMES) == STEPS
    named = [stage for stage, _ in profile.STAGES if stage.startswith("step ")]
    assert named == [f"step {name}" for name in STEPS]


def test_a_profile_sample_goes_to_the_step_whose_function_is_in_its_stack(tmp_path: Path) -> None:
    app = "sessions_app/domain/ingest"
    samples = tmp_path / "web-1.txt"
    samples.write_text(
        f"handle (gunicorn/workers/sync.py:1);collect (sessions_app/features/collector/views.py:2);"
        f"events_record ({app}/pipeline.py:3);sessionize ({app}/steps/sessionize.py:4);"
        f"assign ({app}/sessionizer.py:5) 7\n"
        f"events_record ({app}/pipeline.py:3);apply ({app}/steps/apply.py:6);"
        f"plan_without_erased ({app}/steps/plan.py:7) 2\n"
        f"events_record ({app}/pipeline.py:3);log ({app}/steps/log.py:8);"
        f"log_write ({app}/txlog.py:9) 1\n"
    )
    shares, total = profile.attribute([samples], profile.STAGES)
    assert total == 10
    assert {k: v for k, v in shares.items() if v} == {
        "step sessionize": 7,
        "step apply": 2,
        "step log": 1,
    }


@pytest.mark.django_db(databases=["default", "cassandra"])
def test_every_step_of_a_request_is_timed_under_its_name(site, live_now) -> None:
    beacon = [event(live_now - minutes(2)), event(live_now - minutes(1), kind="click")]
    outcome = events_record(source=Source(site=site, received_at=live_now), raw_events=beacon)
    assert outcome.accepted == 2
    assert list(outcome.timings) == STEPS
    assert all(seconds >= 0 for seconds in outcome.timings.values())


@pytest.mark.django_db(databases=["default", "cassandra"])
def test_a_failure_before_the_log_write_releases_the_claim_and_asks_for_a_retry(
    site, live_now, monkeypatch
) -> None:
    def broken(*args) -> None:
        raise RuntimeError("no plan")

    monkeypatch.setattr(pipeline, "plan", broken)
    beacon = [event(live_now - minutes(1), anon="retry-1", id="ev-retry-1")]
    with pytest.raises(pipeline.StorageUnavailable, match="RuntimeError: no plan"):
        events_record(source=Source(site=site, received_at=live_now), raw_events=beacon)
    monkeypatch.undo()
    # The dedup mark was released: the retry is accepted, not counted as a duplicate.
    retry = events_record(source=Source(site=site, received_at=live_now), raw_events=beacon)
    assert (retry.accepted, retry.duplicates) == (1, 0)


@pytest.mark.django_db(databases=["default", "cassandra"])
def test_a_cached_state_of_an_earlier_release_is_read_without_the_field_it_dropped(
    site, live_now
) -> None:
    """States live in Redis for 35 minutes: one cached before the state lost its
    user_agent goes on, and is cached again without it."""
    first = [event(live_now - minutes(3), anon="old-state")]
    events_record(source=Source(site=site, received_at=live_now), raw_events=first)
    key = state_key(site.id, "old-state")
    cached = redis_client().get(key)
    redis_client().set(key, cached.replace(b'{"session_id"', b'{"user_agent":"UA","session_id"'))
    second = [event(live_now - minutes(2), anon="old-state")]
    events_record(source=Source(site=site, received_at=live_now), raw_events=second)
    [summary] = user_sessions.session_list(site_id=site.id, user_key="old-state")
    assert summary["event_count"] == 2
    state = json.loads(redis_client().get(key))
    assert state["event_count"] == 2 and "user_agent" not in state
