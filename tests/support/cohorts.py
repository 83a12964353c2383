"""The cohort tests' world and brute force: users active on drawn days of the last ~33
(sent straight to the pipeline), their raw rows, and cohorts, lifecycle and stickiness
recounted from those rows for each unit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.utils import timezone

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.features.cohorts import reads
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from tests.support.clock import recent_fixed
from tests.support.events import event

RAW = (
    "SELECT user_key, type, name, ts, is_bot "
    "FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ?"
)


SPAN_DAYS = 30  # activity on the 30 days before the last 3 (the range: its last 23)
RANGE_FROM = 7  # the range starts this many days into the activity


def origin() -> datetime:
    return recent_fixed(days_ago=SPAN_DAYS + 3, at=timedelta(0))


def send(site, user: str, day: int, minute: int, *, signup: bool, received: datetime | None = None):
    at = origin() + timedelta(days=day, minutes=minute)
    raws = [event(at, anon=user, url="https://shop.example/ü/页")]
    if signup:
        raws.append(event(at + timedelta(seconds=30), kind="custom", name="signup", anon=user))
    outcome = events_record(
        source=Source(site=site, received_at=received or at + timedelta(minutes=1)),
        raw_events=raws,
    )
    assert outcome.accepted == len(raws), outcome


def raw_rows(site) -> list[dict]:
    statement = prepare(RAW)
    end = timebuckets.ceil(timezone.now(), "hour")
    rows = []
    for hour in timebuckets.buckets_between(origin() - timedelta(days=1), end, "hour"):
        for shard in range(site.event_shards):
            rows += list(cassandra_session().execute(statement, (site.id, hour, shard)))
    return rows


def period_users(rows, start: datetime, end: datetime, name: str) -> set[str]:
    """Users with a human event in [start, end) (of `name`, if given)."""
    return {
        r["user_key"]
        for r in rows
        if not r["is_bot"]
        and start <= r["ts"].replace(tzinfo=UTC) < end
        and (not name or (r["type"] == "custom" and r["name"] == name))
    }


def brute_cohorts(rows, query: reads.Query) -> list[tuple[int, list[int]]]:
    ends = [timebuckets.next_start(s, query.unit) for s in query.starts]
    seen = period_users(rows, datetime(1970, 1, 1, tzinfo=UTC), query.starts[0], query.first_event)
    result = []
    for i, start in enumerate(query.starts):
        first = period_users(rows, start, ends[i], query.first_event)
        cohort = first - seen
        seen |= first
        counts = [
            len(cohort & period_users(rows, query.starts[j], ends[j], query.return_event))
            for j in range(i, len(query.starts))
        ]
        result.append((len(cohort), counts))
    return result


def brute_lifecycle(rows, query: reads.Query) -> list[dict[str, int]]:
    before = timebuckets.floor(query.starts[0] - timedelta(seconds=1), query.unit)
    starts = [before, *query.starts]
    sets = [period_users(rows, s, timebuckets.next_start(s, query.unit), "") for s in starts]
    result = []
    for i in range(1, len(starts)):
        seen = period_users(rows, datetime(1970, 1, 1, tzinfo=UTC), starts[i], "")
        new = sets[i] - seen
        result.append(
            {
                "new": len(new),
                "returning": len(sets[i] & sets[i - 1]),
                "resurrecting": len(sets[i] - sets[i - 1] - new),
                "dormant": -len(sets[i - 1] - sets[i]),
                "active": len(sets[i]),
            }
        )
    return result


def brute_stickiness(rows, query: reads.Query) -> list[list[int]]:
    result = []
    for start in query.starts:
        end = timebuckets.next_start(start, query.unit)
        days = timebuckets.buckets_between(start, end, "day")
        per_user: dict[str, int] = {}
        for day in days:
            for user in period_users(rows, day, day + timedelta(days=1), ""):
                per_user[user] = per_user.get(user, 0) + 1
        result.append(
            [sum(1 for n in per_user.values() if n == k) for k in range(1, len(days) + 1)]
        )
    return result


def query_of(unit: str, first_event: str = "", return_event: str = "") -> reads.Query:
    first = (origin() + timedelta(days=RANGE_FROM)).date()
    last = (origin() + timedelta(days=SPAN_DAYS - 1)).date()
    params = {
        "period": "custom",
        "from": first.isoformat(),
        "to": last.isoformat(),
        "unit": unit,
        "first_event": first_event,
        "return_event": return_event,
    }
    return reads.query_parse(params, now=timezone.now(), zone=UTC)


def assert_exact(site) -> None:
    rows, now = raw_rows(site), timezone.now()
    for unit in reads.UNITS:
        for first, back in (("", ""), ("signup", ""), ("", "signup")):
            query = query_of(unit, first, back)
            answer = reads.cohorts(site.id, query, now=now)
            got = [(r["size"], r["counts"]) for r in answer["cohorts"]]
            assert got == brute_cohorts(rows, query), (unit, first, back)
        query = query_of(unit)
        life = reads.lifecycle(site.id, query, now=now)["periods"]
        assert [{k: r[k] for k in life[0] if k != "start"} for r in life] == brute_lifecycle(
            rows, query
        ), unit
        if unit != "day":
            sticky = reads.stickiness(site.id, query, now=now)["periods"]
            assert [r["days"] for r in sticky] == brute_stickiness(rows, query), unit
