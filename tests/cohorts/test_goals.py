"""Cohorts by goal: the sealed user sets hold, per goal of the site, the set "goal:<id>" of
the users who reached it (from the goals product's count of the hour), so a cohort by first
goal (and "returned" = a goal) equals a brute-force recount of the raw rows, Hypothesis
drawn; a goal defined after the hours were sealed is covered by its backfill; the page
lists the goals by name and refuses another site's goal naming the field."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from sessions_app.domain.aggregates.usersets import goal_set
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.jobs.goal_backfill import goal_backfill, goal_save
from sessions_app.domain.ledger import sites
from sessions_app.features.cohorts import reads
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.pagepaths import page_path
from sessions_app.foundation.models import Site
from tests.support.accounts import member
from tests.support.cohorts import SPAN_DAYS, origin, query_of
from tests.support.events import event
from tests.support.hypothesis import examples
from tests.support.sealing import seal_due

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

RAW = (
    "SELECT user_key, type, name, url, props, ts, is_bot "
    "FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ?"
)
PRO_SIGNUP = {
    "kind": "event",
    "name": "signup",
    "properties": [{"key": "plan", "op": "eq", "value": "pro"}],
}
PRICING = {"kind": "pageview", "path": "/pricing/", "match": "prefix"}
DOINGS = ("visit", "pro", "free", "pricing")


def send(site, user: str, day: int, minute: int, doing: str) -> None:
    at = origin() + timedelta(days=day, minutes=minute)
    raws = [event(at, anon=user, url="https://shop.example/ü/页")]
    later = at + timedelta(seconds=30)
    if doing in ("pro", "free"):
        raws.append(event(later, kind="custom", name="signup", anon=user, props={"plan": doing}))
    if doing == "pricing":
        raws.append(event(later, anon=user, url="https://shop.example/pricing/✓?x=1"))
    outcome = events_record(
        source=Source(site=site, received_at=at + timedelta(minutes=1)), raw_events=raws
    )
    assert outcome.accepted == len(raws), outcome


def raw_rows(site) -> list[dict]:
    statement = prepare(RAW)
    rows = []
    end = timebuckets.ceil(timezone.now(), "hour")
    for hour in timebuckets.buckets_between(origin() - timedelta(days=1), end, "hour"):
        for shard in range(site.event_shards):
            rows += list(cassandra_session().execute(statement, (site.id, hour, shard)))
    return rows


def reached(row, definition) -> bool:
    """The brute force's own reading of the two goals."""
    if definition is PRO_SIGNUP:
        props = json.loads(row["props"]) if row["props"] else {}
        return row["type"] == "custom" and row["name"] == "signup" and props.get("plan") == "pro"
    return row["type"] == "pageview" and (page_path(row["url"]) or "").startswith("/pricing/")


def users(rows, start: datetime, end: datetime, definition) -> set[str]:
    return {
        r["user_key"]
        for r in rows
        if not r["is_bot"]
        and start <= r["ts"].replace(tzinfo=UTC) < end
        and (definition is None or reached(r, definition))
    }


def brute(rows, query: reads.Query, first, back) -> list[tuple[int, list[int]]]:
    ends = [timebuckets.next_start(s, query.unit) for s in query.starts]
    seen = users(rows, datetime(1970, 1, 1, tzinfo=UTC), query.starts[0], first)
    result = []
    for i, start in enumerate(query.starts):
        cohort = users(rows, start, ends[i], first) - seen
        seen |= users(rows, start, ends[i], first)
        counts = [
            len(cohort & users(rows, query.starts[j], ends[j], back))
            for j in range(i, len(query.starts))
        ]
        result.append((len(cohort), counts))
    return result


def assert_exact(site, goal, definition) -> None:
    rows, now, name = raw_rows(site), timezone.now(), goal_set(goal.pk)
    assert any(reached(r, definition) for r in rows)
    for unit in reads.UNITS:
        for first, back in ((definition, None), (None, definition), (definition, definition)):
            query = query_of(unit, name if first else "", name if back else "")
            answer = reads.cohorts(site.id, query, now=now)
            got = [(r["size"], r["counts"]) for r in answer["cohorts"]]
            assert got == brute(rows, query, first, back), (unit, first, back)


activity = st.lists(
    st.lists(
        st.tuples(st.integers(0, SPAN_DAYS - 1), st.sampled_from(DOINGS)),
        min_size=1,
        max_size=6,
        unique_by=lambda t: t[0],
    ),
    min_size=2,
    max_size=6,
).filter(lambda users: any(d == "pro" for u in users for _, d in u))


@pytest.mark.heavy
# No shrinking: every example seals a month of hours; a failing one is reported as drawn.
@settings(
    max_examples=examples(2),
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(activity=activity)
def test_cohorts_by_goal_equal_the_brute_force_and_a_later_goal_is_backfilled(activity):
    site = sites.site_create(name="Goal cohorts", origins=["https://shop.example"])
    pro = goal_save(site=site, name="Pro signup", definition=PRO_SIGNUP, now=origin())
    for u, doings in enumerate(activity):
        for day, doing in doings:
            send(site, f"u{u}-ü", day, 60 * (u % 20) + day, doing)
    send(site, "pricing-fan", 3, 5, "pricing")  # someone reaches the later goal
    seal_due(site)
    assert_exact(site, pro, PRO_SIGNUP)
    # A goal defined after the hours were sealed: none of its sets until its backfill.
    pricing = goal_save(site=site, name="Pricing", definition=PRICING, now=timezone.now())
    query = query_of("week", goal_set(pricing.pk))
    assert not any(r["size"] for r in reads.cohorts(site.id, query, now=timezone.now())["cohorts"])
    goal_backfill(goal_id=pricing.pk, now=timezone.now())
    assert_exact(site, pricing, PRICING)
    assert_exact(site, pro, PRO_SIGNUP)  # the backfill rewrote the sets: still exact


def test_the_page_lists_the_goals_and_refuses_another_sites(client, analyst, site):
    member(analyst, site)
    goal = goal_save(site=site, name="Pro <signup> ✓", definition=PRO_SIGNUP, now=timezone.now())
    page = f"/sites/{site.id}/cohorts/"
    shown = client.get(page, {"first_event": goal_set(goal.pk)}).content.decode()
    assert f'<option value="goal:{goal.pk}" label="Goal: Pro &lt;signup&gt; ✓">' in shown
    assert "after their first “Pro &lt;signup&gt; ✓”" in shown
    other = Site.objects.create(name="Other")
    theirs = goal_save(site=other, name="Theirs", definition=PRO_SIGNUP, now=timezone.now())
    response = client.get(page, {"return_event": goal_set(theirs.pk)})
    assert response.status_code == 400
    assert "return_event: no such goal on this site" in response.content.decode()
    api = client.get(f"/api/sites/{site.id}/cohorts", {"first_event": goal_set(theirs.pk)})
    assert api.status_code == 400 and "first_event" in api.content.decode()
