"""Erasure finds what outlives a user's sessions by the key itself: sealed per-user counts
(hour, day, month) and the user's partition-width history."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app import tasks
from sessions_app.domain.aggregates import heatmap_rows, seal, stored
from sessions_app.domain.aggregates.heatmaps import UNKNOWN
from sessions_app.domain.erasure import erasures
from sessions_app.domain.ingest import pipeline, redo
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ingest.steps.plan import plan as plan_step
from sessions_app.domain.ledger import policies
from sessions_app.domain.sessions import feed, lists
from sessions_app.features.funnels import defs, results
from sessions_app.foundation.core import stamps, timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.models import ErasureRequest, UserBucketWidth
from sessions_app.foundation.tables import retention_specs, user_sessions
from tests.support.accounts import auth
from tests.support.anywhere import rows_mentioning, stamped_after
from tests.support.browser import wait_for
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

SHORT_LIVED = (retention_specs.RAW_EVENTS, retention_specs.SESSIONS)


def _counts(site, key: str, buckets: dict[str, object]) -> dict[str, int]:
    """How many per-user count rows of key each table holds for these buckets."""
    found = {}
    for granularity, bucket in buckets.items():
        rows = cassandra_session().execute(
            prepare(
                "SELECT user_key FROM {ks}.bucket_users "
                "WHERE site_id = ? AND granularity = ? AND bucket = ? AND user_key = ?"
            ),
            (site.id, granularity, bucket, key),
        )
        found[f"bucket_users {granularity}"] = len(list(rows))
        period = timebuckets.rolling_period(granularity, bucket)
        rows = cassandra_session().execute(
            prepare(
                "SELECT bucket FROM {ks}.rolling_counts "
                "WHERE site_id = ? AND user_key = ? AND granularity = ? AND period = ?"
            ),
            (site.id, key, granularity, period),
        )
        found[f"rolling_counts {granularity}"] = len(list(rows))
    return found


@pytest.mark.heavy
def test_counts_and_widths_go_after_the_sessions_expired(site, monkeypatch, settings):
    settings.SUPPRESSION_CACHE_SECONDS = 0
    settings.ERASURE_SETTLE_SECONDS = 0
    ttl = policies.ttl_seconds
    # Raw events and sessions that expire in seconds (a short retention, sped up).
    monkeypatch.setattr(policies, "ttl_seconds", lambda k: 3 if k in SHORT_LIVED else ttl(k))
    now = timezone.now().replace(microsecond=0)
    hour = timebuckets.floor(now - timedelta(hours=3), "hour")
    if hour.hour >= 22:
        hour -= timedelta(hours=3)  # keep the hour's day sealable (not today's last hours)
    for user in ("gone", "kept"):
        outcome = events_record(
            source=Source(site=site, received_at=hour + timedelta(minutes=20)),
            raw_events=[
                event(hour + timedelta(minutes=m), anon=user, kind="custom", name="login")
                for m in (1, 2)
            ],
        )
        assert outcome.accepted == 2
    assert seal.bucket_seal(site_id=site.id, hour=hour, now=now)
    day, month = timebuckets.floor(hour, "day"), timebuckets.floor(hour, "month")
    seal.bucket_rollup(site_id=site.id, granularity="day", bucket=day, now=now)
    seal.bucket_rollup(site_id=site.id, granularity="month", bucket=month, now=now)
    UserBucketWidth.objects.create(site=site, user_key="gone", width="hour", effective_from=hour)
    buckets = {"hour": hour, "day": day, "month": month}
    before = _counts(site, "gone", buckets)
    assert before["bucket_users hour"] == 1 and before["rolling_counts hour"] >= 1

    time.sleep(4)  # the raw events and the sessions expire; the sealed counts stay
    assert user_sessions.session_list(site_id=site.id, user_key="gone") == []
    assert "gone" in {e["user_key"] for e in feed.feed_latest(site_id=site.id)}  # a day

    root = User.objects.create_superuser("root", password="pw-root-123")
    request = erasures.erasure_request(
        site=site, key="gone", kind=ErasureRequest.ANONYMOUS_ID, requested_by=root
    )
    tasks.erase_user.apply(args=[str(request.pk)]).get()
    request.refresh_from_db()
    assert request.state == ErasureRequest.DONE, request.error
    after = _counts(site, "gone", buckets)
    assert set(after.values()) == {0}, after
    assert not UserBucketWidth.objects.filter(user_key="gone").exists()
    assert "gone" not in {e["user_key"] for e in feed.feed_latest(site_id=site.id)}
    assert request.counts["user_bucket_widths"] == 1
    # The other user's counts stay.
    assert set(_counts(site, "kept", buckets).values()) == {1}


def _erase(site, key: str, kind: str) -> ErasureRequest:
    root = User.objects.get_or_create(username="root", defaults={"is_superuser": True})[0]
    request = erasures.erasure_request(site=site, key=key, kind=kind, requested_by=root)
    tasks.erase_user.apply(args=[str(request.pk)]).get()
    request.refresh_from_db()
    assert request.state == ErasureRequest.DONE, request.error
    return request


def _identify(site, at, anon: str, user: str, id: str) -> None:
    raw = event(at, kind="custom", name="$identify", anon=anon, user_id=user, id=id)
    events_record(source=Source(site=site, received_at=timezone.now()), raw_events=[raw])


def test_erasing_an_anonymous_id_removes_its_links_in_every_user(site, settings):
    settings.SUPPRESSION_CACHE_SECONDS = 0
    settings.ERASURE_SETTLE_SECONDS = 0
    at = timezone.now() - timedelta(minutes=10)
    _identify(site, at, "shared-device", "ann", "l1")  # one device, two people
    _identify(site, at + timedelta(minutes=1), "shared-device", "ben", "l2")
    _identify(site, at, "ann-phone", "ann", "l3")
    assert lists.identity_links(site_id=site.id, user_id="ann") == ["ann-phone", "shared-device"]
    assert lists.identity_links(site_id=site.id, user_id="ben") == ["shared-device"]

    request = _erase(site, "shared-device", ErasureRequest.ANONYMOUS_ID)
    assert request.counts["identity_links"] == 2
    assert lists.identity_links(site_id=site.id, user_id="ann") == ["ann-phone"]
    assert lists.identity_links(site_id=site.id, user_id="ben") == []


def test_erasing_a_user_id_removes_its_devices_links_to_other_users(site, settings):
    settings.SUPPRESSION_CACHE_SECONDS = 0
    settings.ERASURE_SETTLE_SECONDS = 0
    at = timezone.now() - timedelta(minutes=10)
    _identify(site, at, "family-tablet", "cat", "m1")
    _identify(site, at + timedelta(minutes=1), "family-tablet", "dan", "m2")
    _erase(site, "cat", ErasureRequest.USER_ID)  # covers family-tablet, linked to cat
    assert lists.identity_links(site_id=site.id, user_id="cat") == []
    assert lists.identity_links(site_id=site.id, user_id="dan") == []


def test_a_request_held_past_an_erasure_does_not_write_the_user_back(site, settings, monkeypatch):
    """The request validates (the key is not suppressed yet), is held while the key is
    erased, then resumes: nothing of the user is written or logged; the retry is refused."""
    settings.SUPPRESSION_CACHE_SECONDS = 0
    settings.ERASURE_SETTLE_SECONDS = 2  # the applier's age limit becomes 1 s
    reached, release = threading.Event(), threading.Event()

    def held_plan(*args):
        reached.set()
        assert release.wait(60)
        return plan_step(*args)

    monkeypatch.setattr(pipeline, "plan", held_plan)
    at = timezone.now() - timedelta(minutes=2)
    beacon = [event(at, anon="held"), event(at + timedelta(seconds=1), anon="bystander")]
    result: dict[str, object] = {}

    def send() -> None:
        try:
            result["outcome"] = events_record(
                source=Source(site=site, received_at=timezone.now()), raw_events=beacon
            )
        except pipeline.StorageUnavailable as exc:
            result["error"] = exc

    worker = threading.Thread(target=send)
    worker.start()
    assert reached.wait(30)
    _erase(site, "held", ErasureRequest.ANONYMOUS_ID)  # suppress, settle, delete
    release.set()
    worker.join(60)
    assert isinstance(result.get("error"), pipeline.StorageUnavailable), result
    monkeypatch.undo()

    settings.TXLOG_REDO_GRACE = timedelta(0)
    redo.txlog_redo(now=timezone.now() + timedelta(seconds=1))
    assert user_sessions.session_list(site_id=site.id, user_key="held") == []
    retry = events_record(source=Source(site=site, received_at=timezone.now()), raw_events=beacon)
    assert retry.accepted == 1 and retry.rejected[0]["reason"].endswith(
        "erased on request; not accepted"
    )
    assert user_sessions.session_list(site_id=site.id, user_key="held") == []
    assert len(user_sessions.session_list(site_id=site.id, user_key="bystander")) == 1


@pytest.mark.empty_tables  # brute force over every table of the keyspace
def test_nothing_of_a_user_whose_sessions_expired_is_left_in_any_table(site, monkeypatch, settings):
    """Brute force over every table of the keyspace (tests/support/anywhere.py): after the
    raw events and sessions expired (a short retention), erasing the user id leaves no row
    that mentions it, the anonymous id it used before identify() or their sessions (its
    per-user counts outlive the sessions; its rage click's sample in the heatmap and its
    funnel day's units end with the raw rows), in any column, blob or map; another
    user's rows stay. (Site aggregates hold no keys: pages and clicks by path and label.
    Their counts keep the user's share once the raw rows are gone; README, Security.)"""
    settings.SUPPRESSION_CACHE_SECONDS = 0
    settings.ERASURE_SETTLE_SECONDS = 0
    settings.FUNNEL_INLINE_DAYS = 100  # no worker here: the day is scanned in the request
    ttl = policies.ttl_seconds
    monkeypatch.setattr(policies, "ttl_seconds", lambda k: 3 if k in SHORT_LIVED else ttl(k))
    tag = uuid.uuid4().hex[:10]
    user, anon, other = f"gone-{tag}", f"gone-device-{tag}", f"kept-{tag}"
    now = timezone.now().replace(microsecond=0)
    hour = timebuckets.floor(now - timedelta(hours=3), "hour")
    if hour.hour >= 22:
        hour -= timedelta(hours=3)  # keep the hour's day sealable
    for who, device in ((user, anon), (other, f"kept-device-{tag}")):
        at = hour + timedelta(minutes=5)
        raws = [
            # before identify(): counted under the device's anonymous id
            event(at - timedelta(seconds=20), anon=device, url="https://shop.example/"),
            event(at - timedelta(seconds=10), kind="custom", name="signup", anon=device),
            event(
                at,
                kind="custom",
                name="$identify",
                anon=device,
                user_id=who,
                props={"plan": "pro", "email": f"{who}@example.com"},
            ),
            event(
                at + timedelta(seconds=10),
                anon=device,
                user_id=who,
                url="https://shop.example/account",
            ),
            event(
                at + timedelta(seconds=20),
                kind="click",
                anon=device,
                user_id=who,
                element={"tag": "a", "text": "Orders", "href": "https://shop.example/orders"},
                pos={"x": 0.5, "y": 120},
                rage=True,
                dead=True,
            ),
            event(
                at + timedelta(seconds=30),
                kind="custom",
                name="purchase",
                anon=device,
                user_id=who,
                props={"buyer": who},
            ),
        ]
        outcome = events_record(
            source=Source(site=site, received_at=at + timedelta(minutes=1)), raw_events=raws
        )
        assert outcome.accepted == 6, outcome
        # A rejected event of theirs is kept (with its payload) in failed_events.
        bad = events_record(
            source=Source(site=site, received_at=at + timedelta(minutes=1)),
            raw_events=[{**event(at, anon=device, user_id=who), "type": "bogus"}],
        )
        assert bad.rejected
    assert seal.bucket_seal(site_id=site.id, hour=hour, now=now)
    day, month = timebuckets.floor(hour, "day"), timebuckets.floor(hour, "month")
    assert seal.bucket_rollup(site_id=site.id, granularity="day", bucket=day, now=now)
    assert seal.bucket_rollup(site_id=site.id, granularity="month", bucket=month, now=now)
    steps = [
        {"kind": "pageview", "path": "/", "match": "exact"},
        {"kind": "event", "name": "purchase"},
    ]
    funnel = defs.funnel_create(site=site, name="buy", definition={"steps": steps})
    units = results.funnel_units(
        site=site, version=funnel.current, start=day, end=timebuckets.next_start(day, "day")
    ).units
    assert {u.key for u in units} & {user, anon}
    (heat,) = heatmap_rows.buckets_read(site_id=site.id, buckets=[("hour", hour)])
    assert heat[("/", UNKNOWN)].elements["Orders"] == [2, 2, 2]  # counted, without who
    UserBucketWidth.objects.create(site=site, user_key=user, width="hour", effective_from=hour)
    sessions = [
        str(s["session_id"])
        for k in (user, anon)
        for s in user_sessions.session_list(site_id=site.id, user_key=k)
    ]
    assert sessions
    before = rows_mentioning(user, anon)
    # Not user_properties: its traits have the sessions' TTL, 3 s here, which a slow
    # machine has spent by now (their erasure: test_an_identify_dated_hours_ahead_...).
    assert {"bucket_users", "rolling_counts"} <= set(before), before
    assert set(
        stored.bucket_user_counts(site_id=site.id, granularity="month", bucket_starts=[month])
    ) >= {user, anon}

    # Raw events and sessions expire, 3 s after they were written (the sessions are
    # polled for); counts and the identity links stay.
    for key in (user, anon):
        wait_for(lambda key=key: user_sessions.session_list(site_id=site.id, user_key=key) == [])
    # The link outlives the sessions as long as the counts it leads to (retention_specs.LINKS).
    assert lists.identity_links(site_id=site.id, user_id=user) == [anon]

    request = _erase(site, user, ErasureRequest.USER_ID)
    assert request.keys == [user, anon]
    assert request.counts["bucket_users"] >= 3  # hour, day, month
    assert rows_mentioning(user, anon, *sessions) == Counter(), "rows of the erased user are left"
    assert not UserBucketWidth.objects.filter(user_key__in=[user, anon]).exists()
    kept = rows_mentioning(other)
    assert {"bucket_users", "rolling_counts"} <= set(kept), kept  # the brute force sees rows


@pytest.mark.empty_tables  # brute force over every table of the keyspace
def test_an_identify_dated_hours_ahead_is_erased_too(site, client, token, settings):
    """An identify dated 20 h after its receipt (no sent_at: accepted as is) sets traits;
    no cell is stamped later than the receipt plus the skew, and once the erasure's
    receipt says done the API and every table are clear of the user
    (a delete at the present does not shadow a cell stamped in the future)."""
    settings.SUPPRESSION_CACHE_SECONDS = 0
    settings.ERASURE_SETTLE_SECONDS = 0
    tag = uuid.uuid4().hex[:10]
    user, anon = f"ahead-{tag}", f"ahead-device-{tag}"
    received = timezone.now()
    raw = event(
        received + timedelta(hours=20),
        kind="custom",
        name="$identify",
        anon=anon,
        user_id=user,
        props={"email": f"{user}@example.com", "plan": "pro"},
    )
    outcome = events_record(source=Source(site=site, received_at=received), raw_events=[raw])
    assert outcome.accepted == 1 and outcome.clamped == 0, outcome
    url = f"/api/sites/{site.id}/users/{user}/properties"
    assert {p["name"] for p in client.get(url, **auth(token)).json()["properties"]} == {
        "email",
        "plan",
    }
    ceiling = stamps.ceiling_us(timebuckets.epoch_us(received))
    assert stamped_after(ceiling, str(site.id)) == Counter()

    request = _erase(site, user, ErasureRequest.USER_ID)
    assert request.counts["user_properties"] == 2
    assert client.get(url, **auth(token)).json()["properties"] == []
    assert rows_mentioning(user, anon) == Counter(), "rows of the erased user are left"
