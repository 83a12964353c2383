"""User properties: the latest value of each identify trait, first and last set; shown on
the profile, served by the API and its exports, removed by erasure."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app import tasks
from sessions_app.domain.erasure import erasures
from sessions_app.domain.ingest import redo
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ingest.steps import apply as apply_step
from sessions_app.domain.sessions import lists
from sessions_app.foundation.models import ErasureRequest
from tests.support.accounts import auth
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def identify(site, at, *, anon: str, user: str | None, traits: dict, id: str) -> None:
    raw = event(at, kind="custom", name="$identify", anon=anon, id=id, props=traits)
    del raw["url"]
    if user:
        raw["user_id"] = user
    outcome = events_record(source=Source(site=site, received_at=timezone.now()), raw_events=[raw])
    assert outcome.accepted == 1, outcome.rejected


def by_name(site, key: str) -> dict[str, dict]:
    return {p["name"]: p for p in lists.user_properties(site_id=site.id, user_key=key)}


def test_the_latest_value_wins_whatever_order_the_identifies_arrive_in(site, monkeypatch, settings):
    now = timezone.now().replace(microsecond=0)
    t1, t2, t3, t4 = (now - timedelta(minutes=m) for m in (40, 30, 20, 10))
    # Logged but not applied (a crash after the log write): the redo applies it last.
    monkeypatch.setattr(apply_step, "plan_apply", lambda plan, **kwargs: None)
    identify(site, t2, anon="a", user="u", traits={"plan": "team", "seats": 3}, id="i2")
    monkeypatch.undo()
    identify(site, t4, anon="a", user="u", traits={"plan": "enterprise"}, id="i4")
    # A late identify from before both: it sets first_set_at, never the value.
    identify(site, t1, anon="a", user="u", traits={"plan": "free", "email": "u@x"}, id="i1")
    identify(site, t3, anon="a", user="u", traits={"plan": "pro"}, id="i3")
    settings.TXLOG_REDO_GRACE = timedelta(0)
    assert redo.txlog_redo(now=timezone.now() + timedelta(seconds=1), sites=[site]) == 1
    found = by_name(site, "u")
    assert {n: p["value"] for n, p in found.items()} == {
        "plan": "enterprise",
        "seats": 3,
        "email": "u@x",
    }
    assert (found["plan"]["first_set_at"], found["plan"]["last_set_at"]) == (t1, t4)
    assert (found["seats"]["first_set_at"], found["seats"]["last_set_at"]) == (t2, t2)
    assert (found["email"]["first_set_at"], found["email"]["last_set_at"]) == (t1, t1)


def test_a_trait_dated_ahead_of_its_receipt_counts_from_its_receipt(site):
    """Its value is stamped no later than the receipt plus the skew: a later identify
    wins, though dated before it; first_set_at is still the earliest event's time."""
    now = timezone.now().replace(microsecond=0)
    received = now - timedelta(minutes=10)
    ahead = event(
        received + timedelta(hours=20),
        kind="custom",
        name="$identify",
        anon="f-anon",
        id="f1",
        props={"plan": "ahead"},
    )
    outcome = events_record(source=Source(site=site, received_at=received), raw_events=[ahead])
    assert outcome.accepted == 1 and outcome.clamped == 0
    assert by_name(site, "f-anon")["plan"]["value"] == "ahead"
    identify(
        site, now - timedelta(minutes=1), anon="f-anon", user=None, traits={"plan": "now"}, id="f2"
    )
    found = by_name(site, "f-anon")["plan"]
    assert found["value"] == "now"
    assert (found["first_set_at"], found["last_set_at"]) == (now - timedelta(minutes=1),) * 2


def test_profile_api_and_exports_show_them(site, client, analyst, token):
    at = timezone.now().replace(microsecond=0) - timedelta(minutes=5)
    traits = {"plan": "pro", "vip": False, "address": {"city": "Köln"}}
    identify(site, at, anon="p-anon", user="pat", traits=traits, id="p1")

    page = client.get(f"/sites/{site.id}/users/pat/").content.decode()
    assert "Properties" in page and "Köln" in page and "<code>plan</code>" in page

    api = client.get(f"/api/sites/{site.id}/users/pat/properties", **auth(token)).json()
    assert {p["name"]: p["value"] for p in api["properties"]} == traits
    assert api["properties"][0]["first_set_at"].startswith(at.isoformat()[:19])

    base = f"/api/sites/{site.id}/users/pat/properties/export"
    exported = json.loads(client.get(base, {"format": "json"}, **auth(token)).content)
    assert {p["name"]: p["value"] for p in exported} == traits
    response = client.get(base, {"format": "csv"}, **auth(token))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert {r["name"]: json.loads(r["value"]) for r in rows} == traits
    assert all(r["first_set_at"] and r["last_set_at"] for r in rows)


def test_erasure_removes_them_for_the_user_and_linked_ids_only(site, settings):
    settings.SUPPRESSION_CACHE_SECONDS = 0
    settings.ERASURE_SETTLE_SECONDS = 0
    at = timezone.now().replace(microsecond=0) - timedelta(minutes=5)
    identify(site, at, anon="eve-anon", user=None, traits={"theme": "dark"}, id="e0")
    identify(site, at + timedelta(seconds=1), anon="eve-anon", user="eve", traits={"x": 1}, id="e1")
    identify(site, at, anon="bob-anon", user="bob", traits={"plan": "pro"}, id="b1")
    assert by_name(site, "eve") and by_name(site, "eve-anon")

    root = User.objects.create_superuser("root", password="pw-root-123")
    request = erasures.erasure_request(
        site=site, key="eve", kind=ErasureRequest.USER_ID, requested_by=root
    )
    tasks.erase_user.apply(args=[str(request.pk)]).get()
    request.refresh_from_db()
    assert request.state == ErasureRequest.DONE
    assert request.counts["user_properties"] == 2
    assert by_name(site, "eve") == {} and by_name(site, "eve-anon") == {}
    assert set(by_name(site, "bob")) == {"plan"}
