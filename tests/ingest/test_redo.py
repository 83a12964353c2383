"""Eventually atomic: a crash after the log write is repaired by the redo task."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app import tasks
from sessions_app.domain.ingest import redo
from sessions_app.domain.ingest.steps import apply as apply_step
from sessions_app.domain.ledger import sites, suppression
from sessions_app.domain.sessions import activity, feed
from sessions_app.domain.system import health
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.models import RedoWatermark, UnappliedLogEntry
from sessions_app.foundation.tables import user_sessions
from tests.support.events import event, minutes, post
from tests.support.sessions import stored_events

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def _log_minutes(since):
    """Return every log partition's minute from since to now: a test may cross a 10-minute edge."""

    return list(timebuckets.iter_buckets(since, timezone.now() + timedelta(microseconds=1), "10m"))


def _log_rows(site, since):
    statement = prepare(
        "SELECT batch_id, applied FROM {ks}.transaction_log "
        "WHERE site_id = ? AND minute = ? AND shard = ?"
    )
    return [
        dict(r)
        for minute in _log_minutes(since)
        for s in range(4)
        for r in cassandra_session().execute(statement, (site.id, minute, s))
    ]


def test_crash_between_log_and_apply_is_completed_by_redo(
    client, site, live_now, monkeypatch, settings
):
    def crash(plan):
        raise RuntimeError("worker died between log write and apply")

    monkeypatch.setattr(apply_step, "plan_apply", crash)
    t0 = live_now - minutes(15)
    response = post(client, site, [event(t0), event(t0 + minutes(1), kind="click")])
    assert response.status_code == 200 and response.json()["accepted"] == 2
    # Durable in the log, absent from the tables.
    [entry] = _log_rows(site, live_now)
    assert entry["applied"] is False
    assert user_sessions.session_list(site_id=site.id, user_key="anon-1") == []
    monkeypatch.undo()

    settings.TXLOG_REDO_GRACE = minutes(0)
    redone = tasks.redo_transaction_log.apply().get()

    assert redone >= 1
    [summary] = user_sessions.session_list(site_id=site.id, user_key="anon-1")
    assert summary["event_count"] == 2
    assert len(stored_events(session_id=summary["session_id"])) == 2
    assert (
        len(
            activity.user_activity(
                site_id=site.id, user_key="anon-1", start=t0, end=live_now
            ).events
        )
        == 2
    )
    assert [f["session_id"] for f in feed.feed_latest(site_id=site.id)] == [summary["session_id"]]
    assert [r["applied"] for r in _log_rows(site, live_now)] == [True]
    assert RedoWatermark.objects.filter(site=site).exists()
    # Nothing left: a second run applies nothing for this site.
    assert redo.txlog_redo(now=timezone.now(), sites=[site]) == 0


def test_redoing_an_applied_plan_changes_nothing(client, site, live_now):
    t0 = live_now - minutes(15)
    post(client, site, [event(t0), event(t0 + minutes(1))])
    before = user_sessions.session_list(site_id=site.id, user_key="anon-1")
    from sessions_app.domain.ingest.plan import plan_decode
    from sessions_app.domain.ingest.plan_writes import plan_apply

    payload = (
        cassandra_session()
        .execute(
            prepare(
                "SELECT payload FROM {ks}.transaction_log WHERE site_id = ? AND minute = ? "
                "AND shard = ? AND batch_id = ?"
            ),
            (site.id, *_key(site, live_now)),
        )
        .one()["payload"]
    )
    plan_apply(plan_decode(payload))
    assert user_sessions.session_list(site_id=site.id, user_key="anon-1") == before
    assert len(stored_events(session_id=before[0]["session_id"])) == 2


def _key(site, since):
    for minute in _log_minutes(since):
        for shard in range(4):
            rows = list(
                cassandra_session().execute(
                    prepare(
                        "SELECT batch_id FROM {ks}.transaction_log WHERE site_id = ? "
                        "AND minute = ? AND shard = ?"
                    ),
                    (site.id, minute, shard),
                )
            )
            if rows:
                return minute, shard, rows[0]["batch_id"]
    raise AssertionError("no log entry")


def test_redo_of_a_plan_whose_keys_were_all_erased_only_marks_it(
    client, site, live_now, monkeypatch, settings
):
    from sessions_app.foundation.models import Suppression

    monkeypatch.setattr(apply_step, "plan_apply", lambda plan, **kw: None)  # died before apply
    post(client, site, [event(live_now - minutes(15), anon="gone")])
    monkeypatch.undo()
    Suppression.objects.create(site=site, key="gone")
    suppression.suppressed_keys_forget(site_id=site.id)
    settings.TXLOG_REDO_GRACE = minutes(0)

    assert redo.txlog_redo(now=timezone.now(), sites=[site]) == 1

    assert user_sessions.session_list(site_id=site.id, user_key="gone") == []
    assert [r["applied"] for r in _log_rows(site, live_now)] == [True]
    assert redo.txlog_redo(now=timezone.now(), sites=[site]) == 0


@pytest.mark.parametrize("expired", [False, True], ids=["young", "past-the-window"])
def test_an_entry_that_keeps_failing_is_kept_in_view_and_stops_neither_others_nor_other_sites(
    client, site, live_now, monkeypatch, settings, caplog, expired
):

    other = sites.site_create(name="Other", origins=["https://shop.example"])
    monkeypatch.setattr(apply_step, "plan_apply", lambda plan, **kw: None)  # died before apply
    post(client, site, [event(live_now - minutes(15), anon="poison")])
    post(client, site, [event(live_now - minutes(14), anon="fine")])
    post(client, other, [event(live_now - minutes(15), anon="elsewhere")])
    monkeypatch.undo()
    apply = apply_step.plan_apply

    def poisoned(plan, **kw):
        if any(e.user_key == "poison" for e in plan.events):
            raise ValueError("cannot be encoded")
        apply(plan, **kw)

    monkeypatch.setattr(redo, "plan_apply", poisoned)
    settings.TXLOG_REDO_GRACE = minutes(0)
    # Half an hour on, the entries' bucket is behind the horizon: the watermark moves
    # past it, the failing entry stays in view; past the window it is an ERROR.
    settings.TXLOG_REDO_WINDOW = minutes(20) if expired else minutes(120)
    later = timezone.now() + minutes(30)
    bucket = _key(site, live_now)[0]  # the first entry's log partition

    assert redo.txlog_redo(now=later) == 2
    assert user_sessions.session_list(site_id=site.id, user_key="fine")
    assert user_sessions.session_list(site_id=other.id, user_key="elsewhere")
    assert user_sessions.session_list(site_id=site.id, user_key="poison") == []
    for s in (site, other):
        assert RedoWatermark.objects.get(site=s).redone_through > bucket
    [kept] = UnappliedLogEntry.objects.filter(site=site)
    assert "cannot be encoded" in kept.error
    overdue = [r for r in caplog.records if r.levelname == "ERROR" and "redo window" in r.message]
    assert bool(overdue) is expired and (not expired or str(kept.batch_id) in overdue[0].message)
    report = health.health_report(now=later)
    assert report["redo"]["unapplied"] == 1
    assert report["checks"]["redo"]["ok"] is not expired
    assert ("redo" in report.get("failed", [])) is expired

    assert redo.txlog_redo(now=later) == 0  # retried, still failing: still in view
    assert UnappliedLogEntry.objects.get(pk=kept.pk).attempts == 2
    monkeypatch.undo()  # whatever failed is fixed: the next run applies it
    assert redo.txlog_redo(now=later) == 1
    assert user_sessions.session_list(site_id=site.id, user_key="poison")
    assert not UnappliedLogEntry.objects.exists()
    assert [r["applied"] for r in _log_rows(site, live_now)] == [True, True]
    assert health.health_report(now=later)["redo"]["unapplied"] == 0
