"""The explorer's `goal` filter: the sessions that reached one of the site's goals, marked
on their site_sessions rows when the hour of the conversion seals (or by the goal's
backfill), equal a brute-force recount of the raw rows, Hypothesis drawn; another site's
or an unknown goal answers 400 naming `goal` (page and API)."""

from __future__ import annotations

import json
from datetime import UTC, timedelta

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.jobs.goal_backfill import goal_backfill, goal_save
from sessions_app.domain.ledger import sites
from sessions_app.features.analysis import explorer
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.pagepaths import page_path
from sessions_app.foundation.models import Site
from tests.support.accounts import auth, member
from tests.support.clock import recent_fixed
from tests.support.events import event
from tests.support.hypothesis import examples
from tests.support.sealing import seal_due

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

RAW = (
    "SELECT session_id, type, name, url, props, ts, is_bot "
    "FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ?"
)
PRO_SIGNUP = {
    "kind": "event",
    "name": "signup",
    "properties": [{"key": "plan", "op": "eq", "value": "pro"}],
}
PRICING = {"kind": "pageview", "path": "/pricing/", "match": "prefix"}
HOME = {"kind": "pageview", "path": "/ü", "match": "exact"}
STEPS = ("home", "pricing", "pro", "free")
BOT = "Googlebot/2.1 (+http://www.google.com/bot.html)"


def origin():
    return recent_fixed(days_ago=3, at=timedelta(0))


def visit(site, user: str, minute: int, steps: list[str], bot: bool) -> None:
    at = origin() + timedelta(minutes=minute)
    raws = []
    for i, step in enumerate(steps):
        ts = at + timedelta(seconds=20 * i)
        if step in ("pro", "free"):
            raws.append(event(ts, kind="custom", name="signup", anon=user, props={"plan": step}))
        else:
            path = "/pricing/✓?x=1" if step == "pricing" else "/ü"
            raws.append(event(ts, anon=user, url="https://shop.example" + path))
    source = Source(
        site=site, received_at=at + timedelta(minutes=1), user_agent=BOT if bot else None
    )
    assert events_record(source=source, raw_events=raws).accepted == len(raws)


def reached(row, definition) -> bool:
    if definition is PRO_SIGNUP:
        props = json.loads(row["props"]) if row["props"] else {}
        return row["type"] == "custom" and row["name"] == "signup" and props.get("plan") == "pro"
    path = page_path(row["url"]) or ""
    if definition is HOME:
        return row["type"] == "pageview" and path == "/ü"
    return row["type"] == "pageview" and path.startswith("/pricing/")


def brute(site, definition) -> set:
    statement, found = prepare(RAW), set()
    end = timebuckets.ceil(timezone.now(), "hour")
    for hour in timebuckets.buckets_between(origin() - timedelta(hours=1), end, "hour"):
        for shard in range(site.event_shards):
            for r in cassandra_session().execute(statement, (site.id, hour, shard)):
                if not r["is_bot"] and reached(r, definition):
                    found.add(r["session_id"])
    return found


def explored(site, goal, **more) -> set:
    end = origin() + timedelta(days=2)
    params = {
        "start": origin().astimezone(UTC).isoformat(),
        "end": end.isoformat(),
        "goal": str(goal.pk),
        **more,
    }
    query = explorer.explorer_query_parse(params, now=timezone.now())
    found, cursor = set(), None
    while True:
        page = explorer.sessions_explore(site_id=site.id, query=query, cursor=cursor, limit=200)
        found |= {s["session_id"] for s in page.sessions}
        if not page.next_cursor:
            return found
        cursor = page.next_cursor


visits = st.lists(
    st.tuples(st.lists(st.sampled_from(STEPS), min_size=1, max_size=4), st.booleans()),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=examples(3),
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(visits=visits)
def test_the_goal_filter_equals_the_brute_force_and_a_later_goal_is_backfilled(visits):
    site = sites.site_create(name="Goal sessions", origins=["https://shop.example"])
    pro = goal_save(site=site, name="Pro", definition=PRO_SIGNUP, now=origin())
    for i, (steps, bot) in enumerate(visits):
        visit(site, f"u{i % 5}-ü", 37 * i, [*steps, "pro"] if i == 0 else steps, bot and i > 0)
    seal_due(site)
    want = brute(site, PRO_SIGNUP)
    assert want  # the first visit signed up for pro
    assert explored(site, pro) == want
    assert explored(site, pro, bot="true") == set()  # a bot's conversions count nowhere
    # A goal defined after its hours sealed: its sessions are marked by its backfill.
    pricing = goal_save(site=site, name="Pricing", definition=PRICING, now=timezone.now())
    assert explored(site, pricing) == set()
    goal_backfill(goal_id=pricing.pk, now=timezone.now())
    assert explored(site, pricing) == brute(site, PRICING)
    # A changed definition: the old marks match no more until the backfill marks anew.
    pro = goal_save(site=site, name="Pro", definition=HOME, now=timezone.now(), goal=pro)
    assert explored(site, pro) == set()
    goal_backfill(goal_id=pro.pk, now=timezone.now())
    assert explored(site, pro) == brute(site, HOME)


def test_a_bad_goal_names_the_field(client, site, token, analyst):
    member(analyst, site)
    other = Site.objects.create(name="Other")
    theirs = goal_save(site=other, name="Theirs", definition=PRO_SIGNUP, now=timezone.now())
    ours = goal_save(site=site, name="Ours <b>✓</b>", definition=PRO_SIGNUP, now=timezone.now())
    page = f"/sites/{site.id}/sessions/"
    shown = client.get(page, {"goal": ours.pk}).content.decode()
    assert f'<option value="{ours.pk}" selected>Ours &lt;b&gt;✓&lt;/b&gt;</option>' in shown
    for value, reason in (
        (theirs.pk, "no such goal on this site"),
        ("x", "a goal's id (a whole number)"),
    ):
        response = client.get(page, {"goal": value})
        assert response.status_code == 400
        assert f"goal: {reason}" in response.content.decode().replace("&#x27;", "'")
        api = client.get(f"/api/sites/{site.id}/sessions", {"goal": value}, **auth(token))
        assert api.status_code == 400 and api.json()["field"] == "goal", api.content
