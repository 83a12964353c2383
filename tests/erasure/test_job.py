"""Erasure: ingest → seal → erase → replay, every table checked by its keys; roles; receipts."""

from __future__ import annotations

import json
import time
import uuid
import zlib
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone

from sessions_app import tasks
from sessions_app.domain.aggregates import (
    breakdowns,
    heatmap_rows,
    paths,
    sources,
    stored,
)
from sessions_app.domain.erasure import erasures, job, scan
from sessions_app.domain.ingest import redo
from sessions_app.domain.ingest.plan import EventRow, Plan, SessionSummary, plan_without
from sessions_app.domain.ingest.state import SessionState, state_key
from sessions_app.domain.ingest.steps import apply as apply_step
from sessions_app.domain.ledger import quality, suppression
from sessions_app.domain.sessions import lists
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.redis_client import redis_client
from sessions_app.foundation.models import AdminAction, BucketState, ErasureRequest, Suppression
from sessions_app.foundation.tables import user_sessions
from tests.support.erasure import ALICE, ALICE_ANON, BOB, Traffic, record_batch
from tests.support.events import event
from tests.support.sealing import bucket_aggregate
from tests.support.sessions import stored_events

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

ERASED = "erased on request; not accepted"


# --- reading every table by its keys ---------------------------------------------


def _rows(cql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
    return list(cassandra_session().execute(prepare(cql), params))


def _user_bucket_rows(site, key: str, t: Traffic) -> list[dict[str, Any]]:
    width = timebuckets.parse_width("day")
    found = []
    for bucket in timebuckets.buckets_between(t.hours[0], t.now + timedelta(hours=1), width):
        found += _rows(
            "SELECT event_id FROM {ks}.user_events_by_bucket "
            "WHERE site_id = ? AND user_key = ? AND bucket = ?",
            (site.id, key, bucket),
        )
    return found


def _site_rows(site, hour: datetime) -> list[dict[str, Any]]:
    return sources.site_bucket_events(site_id=site.id, hour=hour, shards=site.event_shards)


def _feed_keys(site) -> set[str]:
    keys = set()
    for sentinel in range(4):
        keys |= {
            r["user_key"]
            for r in _rows(
                "SELECT user_key FROM {ks}.latest_sessions WHERE site_id = ? AND sentinel = ?",
                (site.id, sentinel),
            )
        }
    return keys


def _log_plans(site, t: Traffic) -> list[dict[str, Any]]:
    plans = []
    for minute in timebuckets.buckets_between(
        t.hours[0], timezone.now() + timedelta(minutes=10), "10m"
    ):
        for shard in range(4):
            for row in _rows(
                "SELECT payload FROM {ks}.transaction_log "
                "WHERE site_id = ? AND minute = ? AND shard = ?",
                (site.id, minute, shard),
            ):
                plans.append(json.loads(zlib.decompress(row["payload"])))
    return plans


def _failed(site, t: Traffic) -> list[dict[str, Any]]:
    rows = []
    for day in timebuckets.buckets_between(t.hours[0], timezone.now() + timedelta(days=1), "day"):
        rows += quality.failed_events_list(site_id=site.id, day=day, limit=1000)
    return rows


def _user_counts(site, t: Traffic) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for granularity in ("hour", "day", "month"):
        starts = sorted({timebuckets.floor(h, granularity) for h in t.hours})
        for user, keys in stored.bucket_user_counts(
            site_id=site.id, granularity=granularity, bucket_starts=starts
        ).items():
            for key, n in keys.items():
                counts[user, key] = counts.get((user, key), 0) + n
    return counts


def _rolling_rows(site, key: str, t: Traffic) -> list[dict[str, Any]]:
    rows = []
    for granularity in ("hour", "day", "month"):
        periods = {
            timebuckets.rolling_period(granularity, timebuckets.floor(h, granularity))
            for h in t.hours
        }
        for period in periods:
            rows += _rows(
                "SELECT event_key FROM {ks}.rolling_counts "
                "WHERE site_id = ? AND user_key = ? AND granularity = ? AND period = ?",
                (site.id, key, granularity, period),
            )
    return rows


def _aggregate(site, granularity: str, bucket: datetime) -> dict[str, Any]:
    found = bucket_aggregate(site_id=site.id, granularity=granularity, bucket=bucket)
    assert found is not None
    return found


def _anonymous_links(site, anon: str) -> list[str]:
    rows = _rows(
        "SELECT user_id FROM {ks}.anonymous_links WHERE site_id = ? AND anonymous_id = ?",
        (site.id, anon),
    )
    return [r["user_id"] for r in rows]


def assert_alice_absent(site, t: Traffic) -> None:
    """Query every table by its keys: nothing of alice (user id or anonymous id) is left."""
    alice = {ALICE, ALICE_ANON}
    for key in alice:
        assert user_sessions.session_list(site_id=site.id, user_key=key) == [], key
        assert _user_bucket_rows(site, key, t) == [], key
        assert _rolling_rows(site, key, t) == [], key
    for session_id in t.sessions[ALICE] + t.sessions[ALICE_ANON]:
        assert stored_events(session_id=session_id) == []
    for hour in t.hours:
        assert {e["user_key"] for e in _site_rows(site, hour)} == {BOB}
    assert not _feed_keys(site) & alice
    assert lists.identity_links(site_id=site.id, user_id=ALICE) == []
    assert _anonymous_links(site, ALICE_ANON) == []
    for key in alice:
        assert lists.user_properties(site_id=site.id, user_key=key) == []
    for row in _failed(site, t):
        assert ALICE_ANON not in (row["payload"] or "") and ALICE not in (row["payload"] or "")
    for plan in _log_plans(site, t):
        text = json.dumps(plan)
        assert ALICE not in text and ALICE_ANON not in text, plan
    assert not {user for user, _ in _user_counts(site, t)} & alice
    for key in alice:
        assert redis_client().get(state_key(site.id, key)) is None


def assert_bob_untouched(site, t: Traffic) -> None:
    assert user_sessions.session_list(site_id=site.id, user_key=BOB)
    assert [e["user_key"] for e in _site_rows(site, t.hours[0])] == [BOB]
    assert BOB in _feed_keys(site)
    assert any(BOB in (row["payload"] or "") for row in _failed(site, t))
    assert any(BOB in json.dumps(plan) for plan in _log_plans(site, t))
    assert _user_counts(site, t)[BOB, "pageview"] == 2 * 3  # 2 hours + day + month
    assert _rolling_rows(site, BOB, t)


def _heat_clicks(site, granularity: str, bucket) -> int:
    (rows,) = heatmap_rows.buckets_read(site_id=site.id, buckets=[(granularity, bucket)])
    return sum(heat.clicks for heat in rows.values())


def _erase(site, key: str, kind: str, by: User) -> ErasureRequest:
    request = erasures.erasure_request(site=site, key=key, kind=kind, requested_by=by)
    tasks.erase_user.apply(args=[str(request.pk)]).get()
    request.refresh_from_db()
    return request


# --- the whole story ---------------------------------------------------------------


def test_ingest_erase_replay_leaves_nothing_of_the_user(site, traffic, root, settings):
    t = traffic
    h1, h2 = t.hours
    day, month = timebuckets.floor(h1, "day"), timebuckets.floor(h1, "month")
    before = {
        "h1": _aggregate(site, "hour", h1),
        "h2": _aggregate(site, "hour", h2),
        "month": _aggregate(site, "month", month),
    }
    assert (before["h1"]["events"], before["h1"]["users"]) == (3, 2)
    assert _heat_clicks(site, "hour", h1) == _heat_clicks(site, "month", month) == 1  # hers
    assert (before["h2"]["events"], before["h2"]["users"]) == (3, 2)
    month_dims = breakdowns.breakdowns_read(site_id=site.id, buckets=[("month", month)])
    assert sum(e.sessions for e in month_dims["month", month]["device"].values()) == 4
    assert sum(e.conversions for e in month_dims["month", month]["device"].values()) == 1
    assert before["month"]["events"] == 6 and before["month"]["conversions"] == 1
    assert _user_counts(site, t)[ALICE_ANON, "pageview"] == 3
    assert _rolling_rows(site, ALICE, t)
    assert lists.identity_links(site_id=site.id, user_id=ALICE) == [ALICE_ANON]
    assert _anonymous_links(site, ALICE_ANON) == [ALICE]

    receipt = _erase(site, ALICE, ErasureRequest.USER_ID, root)

    # The receipt: who, when, how much.
    assert receipt.state == ErasureRequest.DONE and receipt.error == ""
    assert receipt.requested_by_name == "root" and receipt.finished_at >= receipt.created_at
    assert receipt.keys == [ALICE, ALICE_ANON]
    counts = receipt.counts
    assert counts["user_sessions"] == 2
    assert counts["session_events"] == 4
    assert counts["site_events_by_bucket"] == 4
    assert counts["user_events_by_bucket"] == 4
    assert counts["identity_links"] == 1
    assert counts["failed_events"] == 1
    # The identified batch and the unapplied one deleted; the mixed batch rewritten.
    assert counts["transaction_log"] == 3 and counts["transaction_log_rewritten"] == 1
    assert counts["latest_sessions"] >= 2
    # Her rows of the two hours, the day and the month.
    assert counts["bucket_users"] == 6 and counts["rolling_counts"] > 0
    assert counts["hours_resealed"] == 2 and counts["months_resealed"] == 1
    assert counts["days_resealed"] == 1
    assert set(Suppression.objects.filter(site=site).values_list("key", flat=True)) == {
        ALICE,
        ALICE_ANON,
    }

    assert_alice_absent(site, t)
    assert_bob_untouched(site, t)
    # Aggregates resealed without her, at every resolution.
    for hour in t.hours:
        agg = _aggregate(site, "hour", hour)
        assert (agg["events"], agg["users"], agg["sessions_started"]) == (1, 1, 1)
        assert BucketState.objects.get(site=site, granularity="hour", bucket=hour).state == "sealed"
    assert _aggregate(site, "hour", h1)["top_clicks"] == []
    assert _aggregate(site, "day", day)["events"] == 2
    # Breakdowns too: bob's one session an hour is all that is left in every dimension.
    assert counts["site_sessions"] == 2
    for granularity, bucket, left in (("hour", h1, 1), ("hour", h2, 1), ("month", month, 2)):
        found = breakdowns.breakdowns_read(site_id=site.id, buckets=[(granularity, bucket)])
        for name, values in found[granularity, bucket].items():
            assert sum(e.sessions for e in values.values()) == left, (granularity, name)
            assert sum(e.conversions for e in values.values()) == 0
        assert sum(e.users for e in found[granularity, bucket]["device"].values()) == 1
    # Paths too: bob's page views of /b alone, one an hour.
    for granularity, bucket, left in (("hour", h1, 1), ("hour", h2, 1), ("month", month, 2)):
        (rows,) = paths.buckets_read(site_id=site.id, buckets=[(granularity, bucket)])
        grams = {
            g: n for (side, _), row in rows.items() if side == "from" for g, n in row.grams.items()
        }
        assert grams == {("/b",): left, (paths.ENTRANCE, "/b"): left}, (granularity, grams)
    # Heatmaps too: her click is gone from every resolution.
    assert _heat_clicks(site, "hour", h1) == _heat_clicks(site, "month", month) == 0
    after_month = _aggregate(site, "month", month)
    assert (after_month["events"], after_month["conversions"], after_month["users"]) == (2, 0, 1)
    assert BucketState.objects.get(site=site, granularity="month", bucket=month).state == "sealed"

    # Replay every beacon, plus one from a new device of the same user id.
    received = timezone.now()
    new_bob = event(received - timedelta(minutes=1), anon=BOB)
    replayed = record_batch(site, received, [*t.batches[0], new_bob])
    assert replayed.accepted == 1 and replayed.duplicates == 1  # bob's old event, his new one
    # Her invalid event too: rejected as erased, so its payload is not kept either.
    assert [r["reason"] for r in replayed.rejected] == [
        f"events[0].anonymous_id: {ERASED}",
        f"events[1].anonymous_id: {ERASED}",
        f"events[3].anonymous_id: {ERASED}",
        "events[4].type: expected one of pageview, click, custom",
    ]
    again = record_batch(site, received, t.batches[1])
    assert again.accepted == 0
    assert [r["reason"] for r in again.rejected] == [
        f"events[0].anonymous_id: {ERASED}",
        f"events[1].anonymous_id: {ERASED}",
    ]
    other_device = record_batch(
        site, received, [event(received - timedelta(minutes=2), anon="new-device", user_id=ALICE)]
    )
    assert [r["reason"] for r in other_device.rejected] == [f"events[0].user_id: {ERASED}"]
    stats = quality.ingest_counts(site_id=site.id, hour=received)
    assert stats["rejected"]["anonymous_id"] == 5 and stats["rejected"]["user_id"] == 1
    assert stats["received"] == stats["accepted"] + stats["duplicates"] + sum(
        stats["rejected"].values()
    )
    # Rejections are stored with their reason and without the erased user's payload.
    erased_rows = [r for r in _failed(site, t) if r["reason"].endswith(ERASED)]
    assert len(erased_rows) == 6
    assert all(r["payload"] is None for r in erased_rows)

    # A log entry the erasure could not have seen (its request passed the check
    # before the suppression): the redo applies bob's part and drops alice's.
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(suppression, "suppressed_keys", lambda site_id: frozenset())
    monkeypatch.setattr(apply_step, "plan_apply", lambda plan, **kwargs: None)
    straggler = record_batch(
        site,
        received,
        [event(received - timedelta(seconds=30), anon=ALICE_ANON), event(received, anon=BOB)],
    )
    monkeypatch.undo()
    assert straggler.accepted == 2
    settings.TXLOG_REDO_GRACE = timedelta(0)
    assert redo.txlog_redo(now=timezone.now() + timedelta(seconds=1)) >= 1
    assert user_sessions.session_list(site_id=site.id, user_key=ALICE_ANON) == []
    assert _user_bucket_rows(site, ALICE_ANON, t) == []
    bob_now = user_sessions.session_list(site_id=site.id, user_key=BOB)[0]
    assert bob_now["event_count"] == 2  # new_bob and the straggler's bob event
    hour_now = timebuckets.floor(received, "hour")
    assert {e["user_key"] for e in _site_rows(site, hour_now)} == {BOB}
    redis_client().delete(state_key(site.id, ALICE_ANON))  # the straggler's own cache entry
    # Still nothing of alice, and the sealed aggregates stayed as resealed.
    assert _aggregate(site, "month", month)["events"] == 2
    assert not {user for user, _ in _user_counts(site, t)} & {ALICE, ALICE_ANON}


def test_erasing_an_anonymous_id_covers_that_id_only(site, traffic, root):
    receipt = _erase(site, ALICE_ANON, ErasureRequest.ANONYMOUS_ID, root)
    assert receipt.keys == [ALICE_ANON] and receipt.counts["user_sessions"] == 1
    assert user_sessions.session_list(site_id=site.id, user_key=ALICE_ANON) == []
    # The identified sessions are keyed by the user id: erase that to remove them.
    assert user_sessions.session_list(site_id=site.id, user_key=ALICE)
    assert _aggregate(site, "hour", traffic.hours[0])["events"] == 1
    assert _aggregate(site, "hour", traffic.hours[1])["events"] == 3


# Slow: the second run finds no event, so it scans the whole transaction-log TTL.
@pytest.mark.slow
def test_running_the_job_again_deletes_nothing_more(site, traffic, root):
    receipt = _erase(site, BOB, ErasureRequest.ANONYMOUS_ID, root)
    first, attempts = dict(receipt.counts), receipt.attempts  # > 1 if a timeout retried it
    ErasureRequest.objects.filter(pk=receipt.pk).update(state=ErasureRequest.FAILED)
    tasks.erase_user.apply(args=[str(receipt.pk)]).get()
    receipt.refresh_from_db()
    assert receipt.state == ErasureRequest.DONE and receipt.attempts > attempts
    for table in job.TABLES:
        assert receipt.counts.get(table, 0) == first.get(table, 0), table


# --- pure parts ---------------------------------------------------------------------


def test_failed_payloads_are_matched_on_their_ids():
    keys = {"k1"}
    assert scan.payload_mentions('{"anonymous_id":"k1","type":"x"}', keys)
    assert scan.payload_mentions('{"userId":"k1"}', keys)
    assert scan.payload_mentions('{"events":[{"anonymous_id":"k1"', keys)  # truncated
    assert not scan.payload_mentions('{"anonymous_id":"k10"}', keys)
    assert not scan.payload_mentions('{"anonymous_id":"other","url":"https://x/k1x"}', keys)
    assert scan.payload_mentions('{"anonymous_id":["k1"]}', keys)  # carries it: erased
    assert not scan.payload_mentions(None, keys)


def test_a_plan_without_keys_drops_their_events_sessions_and_links():
    now = timezone.now()
    site_id = uuid.uuid4()
    s1, s2, s3 = (uuid.uuid1() for _ in range(3))
    plan = Plan(
        site_id=site_id,
        batch_id=s1,
        received_at=now,
        version=1,
        events=[
            EventRow(site_id, "u", s1, s1, "pageview", now),
            EventRow(site_id, "other", s2, s2, "pageview", now),
            EventRow(site_id, "id-of-x", s3, s3, "pageview", now),
        ],
        sessions=[
            SessionSummary(site_id, "u", SessionState(s1, now, now)),
            SessionSummary(site_id, "other", SessionState(s2, now, now)),
            SessionSummary(
                site_id, "id-of-x", SessionState(s3, now, now, anonymous_id="u", user_id="id-of-x")
            ),
        ],
        links=[("id-of-x", "u"), ("y", "z")],
    )
    kept = plan_without(plan, {"u"})
    assert [e.user_key for e in kept.events] == ["other"]
    assert [s.user_key for s in kept.sessions] == ["other"]
    assert kept.links == [("y", "z")]
    assert len(plan.events) == 3  # the original is unchanged


# --- pages and roles -----------------------------------------------------------------


def _login(client, name: str, group: str | None) -> User:
    user = User.objects.create_user(name, password=f"pw-{name}-123")
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    client.force_login(user)
    return user


@pytest.mark.parametrize("group", ["analyst", None])
def test_analysts_get_403_on_every_erasure_page_and_action(client, site, root, group):
    request = ErasureRequest.objects.create(
        site=site, key="k", kind="user_id", requested_by=root, requested_by_name="root"
    )
    _login(client, "ana", group)
    assert client.get("/erasure/").status_code == 403
    assert client.get(f"/erasure/{request.pk}/").status_code == 403
    response = client.post("/erasure/", {"site": site.pk, "kind": "user_id", "key": "victim"})
    assert response.status_code == 403
    assert not ErasureRequest.objects.filter(key="victim").exists()
    assert not Suppression.objects.filter(key="victim").exists()


def test_anonymous_visitors_are_sent_to_log_in(client):
    response = client.get("/erasure/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_the_form_needs_a_csrf_token(site, root):
    client = Client(enforce_csrf_checks=True)
    client.force_login(root)
    response = client.post("/erasure/", {"site": site.pk, "kind": "user_id", "key": "k"})
    assert response.status_code == 403
    assert not ErasureRequest.objects.exists()


def test_bad_input_is_400_with_the_field(client, site, root):
    client.force_login(root)
    response = client.post("/erasure/", {"site": site.pk, "kind": "email", "key": " "})
    assert response.status_code == 400
    body = response.content.decode()
    assert "kind: user_id or anonymous_id" in body and "key: required" in body


def test_an_admin_erases_from_the_page_and_reads_the_receipt(
    client, site, traffic, root, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(
        tasks.erase_user, "delay", lambda request_id: tasks.erase_user.apply(args=[request_id])
    )
    client.force_login(root)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/erasure/",
            {"site": str(site.pk), "kind": "anonymous_id", "key": BOB, "key_again": BOB},
        )
    assert response.status_code == 302
    request = ErasureRequest.objects.get(key=BOB)
    assert response["Location"] == f"/erasure/{request.pk}/"
    page = client.get(response["Location"])
    body = page.content.decode()
    assert page.status_code == 200 and "Erasure: done" in body
    assert "data-reload-every" not in body  # finished: no more reloading
    flat = body.replace("\n", "")
    assert '<code>user_sessions</code></td><td class="num">2</td>' in flat  # his two sessions
    assert "root" in body
    listing = client.get("/erasure/").content.decode()
    assert f"/erasure/{request.pk}/" in listing and "done" in listing
    assert user_sessions.session_list(site_id=site.id, user_key=BOB) == []
    audit = AdminAction.objects.get(action="erasure.request")
    assert audit.actor_name == "root" and audit.details["erasure"] == str(request.pk)
    assert BOB not in str(audit.details) + audit.target  # the audit keeps no erased key


def test_a_queued_request_page_reloads_itself(client, site, root):
    request = ErasureRequest.objects.create(
        site=site, key="k", kind="user_id", requested_by=root, requested_by_name="root"
    )
    client.force_login(root)
    body = client.get(f"/erasure/{request.pk}/").content.decode()
    assert 'data-reload-every="3"' in body and "waiting for a worker" in body


def test_stalled_requests_are_found_for_resuming(site, root):
    old = ErasureRequest.objects.create(
        site=site, key="k", kind="user_id", requested_by=root, requested_by_name="root"
    )
    ErasureRequest.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(hours=2))
    ErasureRequest.objects.create(
        site=site, key="k2", kind="user_id", requested_by=root, requested_by_name="root"
    )
    stalled = erasures.erasures_stalled(now=timezone.now(), after=timedelta(hours=1))
    assert [r.pk for r in stalled] == [old.pk]


@pytest.mark.django_db(transaction=True, databases=["default", "cassandra"])
def test_a_real_worker_erases_and_reseals(site, traffic, root, celery_worker_process):
    """The job through Redis and a prefork worker: the receipt fills in, the hours reseal."""
    request = ErasureRequest.objects.create(
        site=site, key=BOB, kind="anonymous_id", requested_by=root, requested_by_name="root"
    )
    Suppression.objects.create(site=site, key=BOB, erasure=request)
    # The worker has its own settings (a 20 s settle): date the suppression back instead.
    Suppression.objects.filter(key=BOB).update(created_at=timezone.now() - timedelta(minutes=5))
    tasks.erase_user.delay(str(request.pk))
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        request.refresh_from_db()
        if request.finished:
            break
        time.sleep(0.5)
    assert request.state == ErasureRequest.DONE, request.error
    assert request.counts["user_sessions"] == 2 and request.counts["hours_resealed"] == 2
    assert user_sessions.session_list(site_id=site.id, user_key=BOB) == []
    for hour in traffic.hours:
        assert {e["user_key"] for e in _site_rows(site, hour)} <= {ALICE, ALICE_ANON}
        assert _aggregate(site, "hour", hour)["users"] == 1


# Slow: a key with no event makes the job scan the whole transaction-log TTL.
@pytest.mark.slow
def test_the_job_waits_for_collectors_to_reload_the_list(site, root, settings, monkeypatch):
    settings.ERASURE_SETTLE_SECONDS = 30
    slept: list[float] = []
    monkeypatch.setattr(job, "_pause", slept.append)
    _erase(site, "someone", ErasureRequest.ANONYMOUS_ID, root)
    assert len(slept) == 1 and 25 < slept[0] <= 30


def test_the_suppression_list_is_cached_per_process(site, settings):
    settings.SUPPRESSION_CACHE_SECONDS = 60
    assert suppression.suppressed_keys(site_id=site.id) == frozenset()
    Suppression.objects.create(site=site, key="gone")
    assert suppression.suppressed_keys(site_id=site.id) == frozenset()  # cached
    suppression.suppressed_keys_forget(site_id=site.id)
    assert suppression.suppressed_keys(site_id=site.id) == frozenset({"gone"})


def test_collect_answers_200_with_the_reason_and_keeps_the_good_events(client, site):
    live_now = timezone.now().replace(microsecond=0)
    from tests.support.events import post

    Suppression.objects.create(site=site, key="gone")
    response = post(
        client,
        site,
        [
            event(live_now, anon="gone"),
            event(live_now, anon="kept"),
            event(live_now, anon="x", user_id="gone"),
        ],
    )
    assert response.status_code == 200
    body = response.json()
    assert body["accepted"] == 1
    assert body["rejected"] == [
        {"index": 0, "reason": f"events[0].anonymous_id: {ERASED}"},
        {"index": 2, "reason": f"events[2].user_id: {ERASED}"},
    ]
    assert user_sessions.session_list(site_id=site.id, user_key="kept")
    assert user_sessions.session_list(site_id=site.id, user_key="gone") == []
