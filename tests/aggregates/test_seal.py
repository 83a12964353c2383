"""Bucket sealing: aggregates, idempotency, reopening by late events, the sweep, a real worker."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from cassandra.query import BatchStatement
from django.utils import timezone

from sessions_app import tasks
from sessions_app.domain.aggregates import states, stored, tally, totals
from sessions_app.domain.aggregates.seal import bucket_seal
from sessions_app.domain.aggregates.sources import Hour
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ledger import policies
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.redis_client import redis_client
from sessions_app.foundation.models import BucketState
from sessions_app.foundation.tables import bucket_users, rolling_counts, user_sessions
from tests.support.conversion import purchase_goal
from tests.support.events import event
from tests.support.sealing import bucket_aggregate

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


@pytest.fixture
def hour_with_traffic(site):
    """Three hours ago: two human visits (one bounce, one purchase: the site's goal) and a bot."""
    purchase_goal(site)
    now = timezone.now().replace(microsecond=0)
    hour = timebuckets.floor(now - timedelta(hours=3), "hour")
    t = hour + timedelta(minutes=5)
    human = [
        event(t, anon="h1", url="https://shop.example/"),
        event(
            t + timedelta(minutes=1),
            kind="click",
            anon="h1",
            element={"tag": "button", "selector": "#buy"},
        ),
        event(t + timedelta(minutes=2), anon="h1", url="https://shop.example/cart?x=1"),
        event(t + timedelta(minutes=3), kind="custom", name="purchase", anon="h1"),
    ]
    events_record(
        source=Source(site=site, received_at=hour + timedelta(minutes=30)), raw_events=human
    )
    events_record(
        source=Source(site=site, received_at=hour + timedelta(minutes=30)),
        raw_events=[event(t + timedelta(minutes=9), anon="h2", url="https://shop.example/")],
    )
    events_record(
        source=Source(
            site=site, received_at=hour + timedelta(minutes=30), user_agent="Googlebot/2.1"
        ),
        raw_events=[event(t, anon="bot", url="https://shop.example/")],
    )
    return hour, now


def test_aggregation_of_a_bucket_excludes_bots():
    sid = {user: uuid.uuid1() for user in ("a", "b", "bot")}
    events = [
        {"type": "pageview", "user_key": "a", "url": "https://x.example/p?q=1", "is_bot": False},
        {"type": "pageview", "user_key": "a", "url": "https://x.example/p", "is_bot": False},
        {"type": "click", "user_key": "b", "element": {"text": "Buy"}, "is_bot": False},
        {"type": "custom", "name": "purchase", "user_key": "b", "is_bot": False},
        {"type": "pageview", "user_key": "bot", "url": "https://x.example/", "is_bot": True},
    ]
    for e in events:
        e["session_id"] = sid[e["user_key"]]
    result = totals.finish(tally.tally(events))
    assert (result.events, result.users, result.rows_read) == (4, 2, 5)
    assert result.by_type == {"pageview": 2, "click": 1, "custom": 1}
    assert result.top_pages == [("/p", 2)] and result.top_clicks == [("Buy", 1)]


def test_seal_writes_the_aggregates_and_marks_the_bucket(site, hour_with_traffic):
    hour, now = hour_with_traffic
    assert (site.id, "hour", hour) in states.buckets_due(now=now)
    assert bucket_seal(site_id=site.id, hour=hour, now=now) is True

    agg = bucket_aggregate(site_id=site.id, granularity="hour", bucket=hour)
    assert agg["events"] == 5 and agg["rows_read"] == 6  # the bot's event is read, not counted
    assert agg["by_type"] == {"pageview": 3, "click": 1, "custom": 1}
    assert agg["users"] == 2 and agg["sessions_started"] == 2
    assert agg["bounces"] == 1 and agg["conversions"] == 1
    assert agg["top_pages"] == [("/", 2), ("/cart", 1)]
    assert sum(agg["durations"].values()) == 2
    state = BucketState.objects.get(site=site, granularity="hour", bucket=hour)
    assert state.state == BucketState.SEALED and state.seals == 1
    assert (site.id, "hour", hour) not in states.buckets_due(now=now)


def test_sealing_twice_gives_the_same_rows(site, hour_with_traffic):
    hour, now = hour_with_traffic
    bucket_seal(site_id=site.id, hour=hour, now=now)
    first = bucket_aggregate(site_id=site.id, granularity="hour", bucket=hour)
    bucket_seal(site_id=site.id, hour=hour, now=now)
    second = bucket_aggregate(site_id=site.id, granularity="hour", bucket=hour)
    assert first == second
    assert BucketState.objects.get(site=site, granularity="hour", bucket=hour).seals == 2


@pytest.mark.django_db(transaction=True, databases=["default", "cassandra"])
def test_concurrent_seals_never_double(site, hour_with_traffic):
    hour, now = hour_with_traffic
    barrier = threading.Barrier(2)

    def seal() -> None:
        barrier.wait()
        bucket_seal(site_id=site.id, hour=hour, now=now)

    threads = [threading.Thread(target=seal) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    agg = bucket_aggregate(site_id=site.id, granularity="hour", bucket=hour)
    assert agg["events"] == 5 and agg["users"] == 2


def test_a_late_event_reopens_a_sealed_bucket(site, hour_with_traffic):
    hour, now = hour_with_traffic
    bucket_seal(site_id=site.id, hour=hour, now=now)
    response = events_record(
        source=Source(site=site, received_at=now),
        raw_events=[event(hour + timedelta(minutes=50), anon="late")],
    )
    assert response.late == 1
    state = BucketState.objects.get(site=site, granularity="hour", bucket=hour)
    assert state.state == BucketState.REOPENED and state.late_events == 1
    assert (site.id, "hour", hour) in states.buckets_due(now=now)
    bucket_seal(site_id=site.id, hour=hour, now=now)
    agg = bucket_aggregate(site_id=site.id, granularity="hour", bucket=hour)
    assert agg["events"] == 6 and agg["users"] == 3
    assert (
        BucketState.objects.get(site=site, granularity="hour", bucket=hour).state
        == BucketState.SEALED
    )


def test_open_buckets_are_not_due(site):
    now = timezone.now()
    events_record(source=Source(site=site, received_at=now), raw_events=[event(now)])
    assert not [due for due in states.buckets_due(now=now) if due[0] == site.id]


@pytest.mark.django_db(transaction=True, databases=["default", "cassandra"])
def test_sweep_after_a_redis_flush_seals_with_a_real_worker(
    site, hour_with_traffic, celery_worker_process
):
    hour, _ = hour_with_traffic
    redis_client().flushdb()  # queued tasks and caches gone; the state is in SQL
    enqueued = tasks.seal_due_buckets.apply().get()
    assert enqueued >= 1
    deadline = time.monotonic() + 60
    state = None
    while time.monotonic() < deadline:
        state = BucketState.objects.get(site=site, granularity="hour", bucket=hour)
        if state.state == BucketState.SEALED:
            break
        time.sleep(0.5)
    assert state is not None and state.state == BucketState.SEALED
    agg = bucket_aggregate(site_id=site.id, granularity="hour", bucket=hour)
    assert agg["events"] == 5


def test_admins_see_bucket_states_read_only(client, site, hour_with_traffic):
    from django.contrib.auth.models import User

    hour, now = hour_with_traffic
    bucket_seal(site_id=site.id, hour=hour, now=now)
    client.force_login(User.objects.create_superuser("root", password="pw-root-123"))
    listing = client.get("/admin/sessions_app/bucketstate/", {"state__exact": "sealed"})
    assert listing.status_code == 200
    assert "sealed" in listing.content.decode()
    assert client.get("/admin/sessions_app/bucketstate/add/").status_code == 403


def test_a_session_running_past_the_hour_is_measured_whole(site):
    """A session still active near the hour's end is read from user_sessions: here it
    is one event inside the hour, but 40 minutes and three events in all."""
    now = timezone.now().replace(microsecond=0)
    hour = timebuckets.floor(now - timedelta(hours=4), "hour")
    start = hour + timedelta(minutes=50)
    for minutes in (0, 20, 40):
        ts = start + timedelta(minutes=minutes)
        events_record(
            source=Source(site=site, received_at=ts + timedelta(seconds=5)),
            raw_events=[event(ts, anon="long")],
        )
    short = hour + timedelta(minutes=2)  # over well before the hour ends: from the rows
    events_record(
        source=Source(site=site, received_at=short), raw_events=[event(short, anon="brief")]
    )
    bucket_seal(site_id=site.id, hour=hour, now=now)
    agg = bucket_aggregate(site_id=site.id, granularity="hour", bucket=hour)
    assert agg["events"] == 2 and agg["sessions_started"] == 2
    assert agg["bounces"] == 1  # "brief" only: "long" had three page views
    assert agg["durations"] == {"0-10s": 1, "30m+": 1}


def test_the_seal_reads_the_summaries_of_the_sessions_started_in_its_hour(site):
    """A seal's session summaries are the site_sessions rows of the sessions that started
    in the hour (one slice per shard, no lookup per session): the same summaries as
    user_sessions', whole (a session that goes on into the next hour too), and none of a
    session begun in the hour before."""
    hour = timebuckets.floor(timezone.now() - timedelta(hours=4), "hour")
    users = [f"u{n}" for n in range(60)]
    events_record(
        source=Source(site=site, received_at=timezone.now()),
        raw_events=[
            event(hour + timedelta(minutes=minutes, seconds=n), anon=user, id=f"{user}-{minutes}")
            for n, user in enumerate(users)
            # begun 10 minutes before the hour; in it; going on past its end
            for minutes in ((-10, 5) if n % 3 == 0 else (20, 50, 75) if n % 3 == 1 else (30,))
        ],
    )
    started = {
        s["session_id"]: s
        for u in users
        for s in user_sessions.session_list(site_id=site.id, user_key=u)
        if hour <= s["started_at"] < hour + timedelta(hours=1)
    }
    assert len(started) == 40
    found = {
        row["session_id"]: row
        for row in Hour(site_id=site.id, start=hour, shards=site.event_shards).started
    }
    assert found.keys() == started.keys()
    for session_id, summary in started.items():
        row = found[session_id]
        for name in ("event_count", "pageview_count", "is_bot", "converted"):
            assert row[name] == summary[name], name
        for name in ("started_at", "last_seen_at"):
            assert timebuckets.from_driver(row[name]) == summary[name], name
    last = max(timebuckets.from_driver(r["last_seen_at"]) for r in found.values())
    assert last > hour + timedelta(hours=1)  # whole: past the hour's end


def test_the_seal_reads_sql_only_on_its_own_thread(site, hour_with_traffic, monkeypatch):
    """The seal's count threads use Cassandra only: a Django connection they opened
    would never be closed (a worker would leak one per seal)."""
    from django.db.backends.signals import connection_created

    opened: list[tuple[str, str]] = []

    def record(sender, connection, **kwargs):
        opened.append((connection.alias, threading.current_thread().name))

    hour, now = hour_with_traffic
    monkeypatch.setattr(policies, "_cache", None)  # the TTL's policy is read from SQL again
    connection_created.connect(record)
    try:
        assert bucket_seal(site_id=site.id, hour=hour, now=now)
    finally:
        connection_created.disconnect(record)
    assert not [name for alias, name in opened if alias == "default" and name != "MainThread"]
    counts = stored.bucket_user_counts(site_id=site.id, granularity="hour", bucket_starts=[hour])
    assert counts["h1"]["pageview"] == 2


def test_per_user_counts_of_many_users_are_written_in_batches_of_whole_partitions(site):
    """A seal writes one rolling_counts row a user (its keys' map); users' partitions share
    batches (10 each)."""
    from sessions_app.foundation.core.batches import replica_batches
    from sessions_app.foundation.core.cql import cassandra_session, prepare

    now = timezone.now().replace(microsecond=0)
    hour = timebuckets.floor(now - timedelta(hours=3), "hour")
    users = [f"p{n}" for n in range(25)]
    events_record(
        source=Source(site=site, received_at=now),
        raw_events=[
            event(hour + timedelta(minutes=1, seconds=n), anon=user, id=f"{user}-{k}")
            for n, user in enumerate(users)
            for k in range(n % 3 + 1)  # 1, 2 or 3 page views
        ],
    )
    assert bucket_seal(site_id=site.id, hour=hour, now=now)
    period = timebuckets.rolling_period("hour", hour)
    for n, user in enumerate(users):
        [row] = cassandra_session().execute(
            prepare(rolling_counts.SELECT_PERIODS),
            (site.id, user, "hour", period, "pageview", hour, hour),
        )
        assert (row["event_key"], dict(row["counts"])) == ("", {"pageview": n % 3 + 1})

    statement = prepare(rolling_counts.UPSERT, idempotent=True, write=True)

    def rows(user: str, keys: int) -> list[tuple[Any, ...]]:
        return [
            rolling_counts.upsert_params(
                site_id=site.id,
                user_key=user,
                granularity="hour",
                period=period,
                bucket=hour + timedelta(hours=i),
                counts={"a": 1},
                ttl=60,
            )
            for i in range(keys)
        ]

    partitions = [rows(user, 1) for user in users]
    assert [len(batch) for batch, _ in replica_batches(statement, partitions)] == [10, 10, 5]
    # A partition over the row cap goes alone; the others fill batches up to it.
    partitions[1] = rows("big", 7)
    packed = replica_batches(statement, partitions, rows_per_batch=6)
    # (a partition's lone row goes as itself, not a batch)
    assert [len(b) if isinstance(b, BatchStatement) else 1 for b, _ in packed[:3]] == [1, 7, 6]


def test_a_bucket_s_map_row_decides_over_the_one_key_rows_written_before_it(site):
    """rolling_counts rows written before the ALL rows (one per key) count only where a
    bucket has no ALL row: a bucket resealed since is counted once, from its map."""
    from sessions_app.domain.aggregates.rolling import rolling_count
    from sessions_app.foundation.core.cql import cassandra_session, prepare

    now = timezone.now().replace(microsecond=0)
    old, resealed = (timebuckets.floor(now - timedelta(hours=h), "hour") for h in (5, 4))
    sealed = lambda width, start: True  # noqa: E731 - every bucket counts as sealed
    one_key = prepare(
        "INSERT INTO {ks}.rolling_counts (site_id, user_key, granularity, period, event_key, "
        "bucket, count) VALUES (?, 'u', 'hour', ?, 'pageview', ?, ?)"
    )
    for hour, n in ((old, 3), (resealed, 7)):
        cassandra_session().execute(
            one_key, (site.id, timebuckets.rolling_period("hour", hour), hour, n)
        )
    statement = prepare(rolling_counts.UPSERT, idempotent=True, write=True)
    cassandra_session().execute(
        statement,
        rolling_counts.upsert_params(
            site_id=site.id,
            user_key="u",
            granularity="hour",
            period=timebuckets.rolling_period("hour", resealed),
            bucket=resealed,
            counts={"pageview": 2, "click": 5},
            ttl=600,
        ),
    )
    counted = rolling_count(
        site_id=site.id,
        user_key="u",
        event_key="pageview",
        start=old,
        end=resealed + timedelta(hours=1),
        sealed=sealed,
        widths=(timebuckets.Width.HOUR,),
    )
    assert counted.count == 3 + 2
    clicks = rolling_count(
        site_id=site.id,
        user_key="u",
        event_key="click",
        start=old,
        end=resealed + timedelta(hours=1),
        sealed=sealed,
        widths=(timebuckets.Width.HOUR,),
    )
    assert clicks.count == 5


def test_a_seal_writes_one_row_of_counts_per_user(site, hour_with_traffic):
    """bucket_users holds a map per user; the reader sums the maps of several buckets."""
    from sessions_app.foundation.core.cql import cassandra_session, prepare

    hour, now = hour_with_traffic
    assert bucket_seal(site_id=site.id, hour=hour, now=now)
    rows = (
        cassandra_session()
        .execute(prepare(bucket_users.SELECT_COUNTS), (site.id, "hour", hour))
        .all()
    )
    assert {row["user_key"]: dict(row["counts"]) for row in rows} == {
        "h1": {"pageview": 2, "click": 1, "purchase": 1},
        "h2": {"pageview": 1},
        "bot": {"pageview": 1},  # per-user counts keep bots (the aggregates do not)
    }
    other = hour - timedelta(hours=1)
    cassandra_session().execute(
        prepare(
            "INSERT INTO {ks}.bucket_users (site_id, granularity, bucket, user_key, counts) "
            "VALUES (?, 'hour', ?, ?, ?)"
        ),
        (site.id, other, "h1", {"pageview": 1, "click": 2}),
    )
    counts = stored.bucket_user_counts(
        site_id=site.id, granularity="hour", bucket_starts=[hour, other]
    )
    assert counts == {
        "h1": {"pageview": 3, "click": 3, "purchase": 1},
        "h2": {"pageview": 1},
        "bot": {"pageview": 1},
    }
