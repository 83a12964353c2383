"""Erasure fixtures: a world of two visitors over two sealed hours (alice, anonymous then
identified, and bob), an admin who erases, and no waiting for other collectors."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.domain.aggregates import seal
from sessions_app.domain.ingest.steps import apply as apply_step
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.tables import user_sessions
from tests.support.conversion import purchase_goal
from tests.support.erasure import ALICE, ALICE_ANON, BOB, Traffic, record_batch
from tests.support.events import event


@pytest.fixture(autouse=True)
def _no_waiting(erasure_in_process):
    """Tests run the job in-process: no other collector caches the suppression list."""


@pytest.fixture
def traffic(site, monkeypatch) -> Traffic:
    """Two hours of alice (anonymous, then identified) and bob, sealed up to the month.

    The first batch mixes alice and bob and carries an invalid event of each; one
    more batch of alice's is logged but never applied (a crash after the log write).
    """
    purchase_goal(site)  # alice's purchase converts her visit
    now = timezone.now().replace(microsecond=0)
    h1 = timebuckets.floor(now - timedelta(hours=4), "hour")
    if h1.hour == 23:  # keep both hours in one day (and month): one parent of each
        h1 -= timedelta(hours=1)
    h2 = h1 + timedelta(hours=1)
    t = Traffic(hours=[h1, h2], now=now)
    first = [
        event(h1 + timedelta(minutes=5), anon=ALICE_ANON, url="https://shop.example/a"),
        event(
            h1 + timedelta(minutes=6),
            kind="click",
            anon=ALICE_ANON,
            element={"tag": "button", "text": "Alice's button"},
        ),
        event(h1 + timedelta(minutes=7), anon=BOB, url="https://shop.example/b"),
        {"id": "bad-alice", "type": "bogus", "anonymous_id": ALICE_ANON},
        {"id": "bad-bob", "type": "bogus", "anonymous_id": BOB},
    ]
    identified = [
        event(
            h2 + timedelta(minutes=5), anon=ALICE_ANON, user_id=ALICE, url="https://shop.example/"
        ),
        event(
            h2 + timedelta(minutes=8),
            kind="custom",
            name="purchase",
            anon=ALICE_ANON,
            user_id=ALICE,
        ),
    ]
    bob_later = [event(h2 + timedelta(minutes=9), anon=BOB, url="https://shop.example/b")]
    t.batches = [first, identified, bob_later]
    outcome = record_batch(site, h1 + timedelta(minutes=10), first)
    assert outcome.accepted == 3 and len(outcome.rejected) == 2
    assert record_batch(site, h2 + timedelta(minutes=10), identified).accepted == 2
    assert record_batch(site, h2 + timedelta(minutes=12), bob_later).accepted == 1

    def crash(plan, **kwargs):
        raise RuntimeError("worker died between log write and apply")

    monkeypatch.setattr(apply_step, "plan_apply", crash)
    unapplied = [event(h2 + timedelta(minutes=20), anon=ALICE_ANON, user_id=ALICE)]
    assert record_batch(site, h2 + timedelta(minutes=25), unapplied).accepted == 1
    monkeypatch.undo()

    for hour in t.hours:
        assert seal.bucket_seal(site_id=site.id, hour=hour, now=now)
    for day in sorted({timebuckets.floor(h, "day") for h in t.hours}):
        assert seal.bucket_rollup(site_id=site.id, granularity="day", bucket=day, now=now)
    month = timebuckets.floor(h1, "month")
    assert seal.bucket_rollup(site_id=site.id, granularity="month", bucket=month, now=now)
    for key in (ALICE, ALICE_ANON, BOB):
        t.sessions[key] = [
            s["session_id"] for s in user_sessions.session_list(site_id=site.id, user_key=key)
        ]
    assert len(t.sessions[ALICE]) == 1 and len(t.sessions[ALICE_ANON]) == 1
    return t


@pytest.fixture
def root(db) -> User:
    return User.objects.create_superuser("root", password="pw-root-123")
