"""Retention: policies bind the TTL of new writes, table options, purge of whole partitions."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.utils import timezone

from sessions_app.domain.aggregates import seal
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.jobs import purge
from sessions_app.domain.ledger import policies, sites
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, keyspace, prepare
from sessions_app.foundation.core.ids import time_uuid
from sessions_app.foundation.models import (
    AdminAction,
    BucketState,
    PurgeRun,
    PurgeWatermark,
    RetentionPolicy,
    Site,
)
from sessions_app.foundation.tables import registry, retention_specs
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])
DAY = 86_400


@pytest.fixture(autouse=True)
def _fresh_policies() -> Iterator[None]:
    """Drop cached policies around each test: saved rows are rolled back after it."""
    policies.invalidate()
    yield
    policies.invalidate()


@pytest.fixture
def admin() -> User:
    user = User.objects.create_user("keeper", password="pw-keeper-123")
    user.groups.add(Group.objects.get_or_create(name="admin")[0])
    return user


def _ttl(cql: str, params: tuple) -> int:
    row = cassandra_session().execute(prepare(cql), params).one()
    assert row is not None, cql
    return next(iter(row.values()))


def _ttls(site: Site, *, anon: str, at: datetime) -> dict[str, int]:
    """Return the TTL of one event's row in every raw table and of its session summary."""
    hour = timebuckets.floor(at, "hour")
    row = (
        cassandra_session()
        .execute(
            prepare(
                "SELECT event_id, session_id, TTL(type) AS ttl FROM {ks}.site_events_by_bucket "
                "WHERE site_id = ? AND bucket = ? AND shard = 0"
            ),
            (site.id, hour),
        )
        .all()
    )
    mine = [r for r in row if r["ttl"] is not None]
    by_user = timebuckets.floor(at, settings.USER_EVENTS_BUCKET)
    ttls = {"site_events_by_bucket": min(r["ttl"] for r in mine)}
    ttls["user_events_by_bucket"] = _ttl(
        "SELECT TTL(type) FROM {ks}.user_events_by_bucket "
        "WHERE site_id = ? AND user_key = ? AND bucket = ? LIMIT 1",
        (site.id, anon, by_user),
    )
    sessions = (
        cassandra_session()
        .execute(
            prepare(
                "SELECT session_id, TTL(started_at) AS ttl FROM {ks}.user_sessions "
                "WHERE site_id = ? AND user_key = ?"
            ),
            (site.id, anon),
        )
        .all()
    )
    ttls["user_sessions"] = sessions[0]["ttl"]
    ttls["session_events"] = _ttl(
        "SELECT TTL(doc) FROM {ks}.session_events WHERE session_id = ? LIMIT 1",
        (sessions[0]["session_id"],),
    )
    return ttls


def _near(ttl: int, days: int) -> bool:
    """A TTL written moments ago with `days` of retention."""
    return days * DAY - 120 <= ttl <= days * DAY


def test_saved_policies_set_the_ttl_of_new_writes_and_old_rows_keep_theirs(site, admin):
    now = timezone.now().replace(microsecond=0)
    events_record(
        source=Source(site=site, received_at=now),
        raw_events=[event(now - timedelta(seconds=20), anon="before")],
    )
    before = _ttls(site, anon="before", at=now - timedelta(seconds=20))
    assert all(_near(ttl, 400) for ttl in before.values()), before

    policies.retention_set(key=retention_specs.RAW_EVENTS, days=45, actor=admin)
    policies.retention_set(key=retention_specs.SESSIONS, days=90, actor=admin)
    events_record(
        source=Source(site=site, received_at=now),
        raw_events=[event(now - timedelta(seconds=10), anon="after")],
    )
    after = _ttls(site, anon="after", at=now - timedelta(seconds=10))
    assert _near(after["session_events"], 45)
    assert _near(after["user_events_by_bucket"], 45)
    assert _near(after["user_sessions"], 90)
    # Rows written before the change keep the TTL they were written with.
    again = _ttls(site, anon="before", at=now - timedelta(seconds=20))
    assert _near(again["session_events"], 400) and _near(again["user_sessions"], 400)
    # The site's hour partition now holds rows of both TTLs.
    hour_ttls = sorted(
        r["ttl"]
        for r in cassandra_session()
        .execute(
            prepare(
                "SELECT TTL(type) AS ttl FROM {ks}.site_events_by_bucket "
                "WHERE site_id = ? AND bucket = ? AND shard = 0"
            ),
            (site.id, timebuckets.floor(now - timedelta(seconds=20), "hour")),
        )
        .all()
    )
    if timebuckets.floor(now - timedelta(seconds=20), "hour") == timebuckets.floor(
        now - timedelta(seconds=10), "hour"
    ):
        assert _near(hour_ttls[0], 45) and _near(hour_ttls[-1], 400)


def test_log_failed_events_and_aggregates_follow_their_policies(site, admin):
    now = timezone.now().replace(microsecond=0)
    policies.retention_set(key=retention_specs.TRANSACTION_LOG, days=3, actor=admin)
    policies.retention_set(key=retention_specs.FAILED_EVENTS, days=5, actor=admin)
    policies.retention_set(key=retention_specs.AGGREGATES_HOUR, days=500, actor=admin)
    hour = timebuckets.floor(now - timedelta(hours=2), "hour")
    received = hour + timedelta(minutes=20)
    result = events_record(
        source=Source(site=site, received_at=received),
        raw_events=[
            event(hour + timedelta(minutes=5), anon="agg"),
            {"id": "bad", "type": "pageview"},  # rejected: no ts
        ],
    )
    assert result.accepted == 1 and len(result.rejected) == 1
    log_bucket = timebuckets.floor(received, "10m")
    time.sleep(0.5)  # the collector does not wait for the applied mark
    log_rows = [
        r
        for shard in range(settings.TXLOG_SHARDS)
        for r in cassandra_session()
        .execute(
            prepare(
                "SELECT TTL(payload) AS ttl, TTL(applied) AS mark FROM {ks}.transaction_log "
                "WHERE site_id = ? AND minute = ? AND shard = ?"
            ),
            (site.id, log_bucket, shard),
        )
        .all()
    ]
    assert len(log_rows) == 1
    assert _near(log_rows[0]["ttl"], 3) and _near(log_rows[0]["mark"], 3)
    failed = _ttl(
        "SELECT TTL(reason) FROM {ks}.failed_events WHERE site_id = ? AND day = ? LIMIT 1",
        (site.id, timebuckets.floor(received, "day")),
    )
    assert _near(failed, 5)
    seal.bucket_seal(site_id=site.id, hour=hour, now=now)
    sealed = _ttl(
        "SELECT TTL(events) FROM {ks}.bucket_aggregates "
        "WHERE site_id = ? AND granularity = 'hour' AND bucket = ?",
        (site.id, hour),
    )
    assert _near(sealed, 500)


@pytest.mark.parametrize(
    ("key", "days", "message"),
    [
        (
            retention_specs.RAW_EVENTS,
            10,
            "at least 32 days: events up to 30 days old",
        ),
        (retention_specs.RAW_EVENTS, 2000, "at most 1098 days"),
        (retention_specs.AGGREGATES_HOUR, 100, "12-month rolling counters"),
        (retention_specs.FAILED_EVENTS, 0, "at least 1 days"),
        (retention_specs.SESSIONS, 4000, "at most 3660 days"),
        ("nonsense", 10, "unknown policy"),
    ],
)
def test_policies_outside_their_bounds_are_refused_with_the_reason(admin, key, days, message):
    with pytest.raises(retention_specs.RetentionError, match=re.escape(message)):
        policies.retention_set(key=key, days=days, actor=admin)
    assert not RetentionPolicy.objects.exists()
    assert not AdminAction.objects.exists()


def test_policy_changes_are_audited_with_the_previous_value(admin):
    policies.retention_set(key=retention_specs.RAW_EVENTS, days=90, actor=admin)
    policies.retention_set(key=retention_specs.RAW_EVENTS, days=60, actor=admin)
    actions = list(AdminAction.objects.order_by("id"))
    assert [(a.actor, a.action, a.target) for a in actions] == [
        (admin, "retention.set", "retention raw_events"),
        (admin, "retention.set", "retention raw_events"),
    ]
    assert actions[0].details == {"days": 90, "previous": 400}
    assert actions[1].details == {"days": 60, "previous": 90}
    assert RetentionPolicy.objects.get(key="raw_events").updated_by == admin


# --- table options -------------------------------------------------------------------


def _options() -> dict[str, policies.TableOptions]:
    return {t.table: t for t in policies.live_table_options()}


def test_tables_carry_twcs_windows_backstop_ttls_and_gc_grace():
    options = _options()
    expected_windows = {
        "site_events_by_bucket": "1 HOURS",
        "user_events_by_bucket": "1 DAYS",  # USER_EVENTS_BUCKET=day
        "session_events": "1 DAYS",
        "transaction_log": "10 MINUTES",
        "failed_events": "1 DAYS",
        "ingest_stats": "1 HOURS",
        "latest_sessions": "1 HOURS",
    }
    for table, window in expected_windows.items():
        assert options[table].compaction == "TimeWindowCompactionStrategy", table
        assert options[table].window == window, table
    for table in ("user_sessions", "bucket_aggregates", "rolling_counts", "series_points"):
        assert options[table].compaction == "SizeTieredCompactionStrategy", table
    for spec in retention_specs.SPECS.values():
        for table in registry.tables_of_policy(spec.key):
            backstop = options[table].default_time_to_live
            assert backstop >= spec.max_days * DAY >= spec.default_days() * DAY, table
    assert options["transaction_log"].default_time_to_live == 90 * DAY
    assert options["latest_sessions"].default_time_to_live == DAY
    assert {t.gc_grace_seconds for t in options.values()} == {settings.CASSANDRA_GC_GRACE_SECONDS}


def test_sync_cassandra_restores_options_on_existing_tables():
    cassandra_session().execute(
        f"ALTER TABLE {keyspace()}.failed_events WITH gc_grace_seconds = 1 "
        "AND default_time_to_live = 60 AND compaction = {'class': 'SizeTieredCompactionStrategy'}"
    )
    assert _options()["failed_events"].gc_grace_seconds == 1
    call_command("sync_cassandra", database="cassandra", verbosity=0)
    restored = _options()["failed_events"]
    assert restored.gc_grace_seconds == settings.CASSANDRA_GC_GRACE_SECONDS
    assert restored.default_time_to_live == 366 * DAY
    assert (restored.compaction, restored.window) == ("TimeWindowCompactionStrategy", "1 DAYS")


# --- purge ---------------------------------------------------------------------------

INSERT_SITE_EVENT = """
INSERT INTO {ks}.site_events_by_bucket
  (site_id, bucket, shard, event_id, session_id, user_key, type, ts)
VALUES (?, ?, ?, ?, ?, ?, 'pageview', ?)
"""
INSERT_FAILED = """
INSERT INTO {ks}.failed_events (site_id, day, failed_id, received_at, reason)
VALUES (?, ?, ?, ?, 'x')
"""
INSERT_LOG = """
INSERT INTO {ks}.transaction_log
  (site_id, minute, shard, batch_id, received_at, event_count, payload)
VALUES (?, ?, ?, ?, ?, 1, 0x00)
"""


def _put_site_events(site: Site, hour: datetime, shard: int = 0) -> None:
    ts = hour + timedelta(minutes=7)
    cassandra_session().execute(
        prepare(INSERT_SITE_EVENT),
        (site.id, hour, shard, time_uuid(ts, f"{hour}:{shard}"), time_uuid(ts, "s"), "u", ts),
    )


def _count(cql: str, params: tuple) -> int:
    return len(cassandra_session().execute(prepare(cql), params).all())


def _site_events(site: Site, hour: datetime, shard: int = 0) -> int:
    return _count(
        "SELECT event_id FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? "
        "AND shard = ?",
        (site.id, hour, shard),
    )


@pytest.fixture
def old_site(admin) -> Site:
    """A site created 34 days ago with two event shards, raw events kept 32 days."""
    site = sites.site_create(name="Old", origins=[], events_per_second=10)
    Site.objects.filter(pk=site.pk).update(
        created_at=timezone.now() - timedelta(days=34), event_shards=2
    )
    policies.retention_set(key=retention_specs.RAW_EVENTS, days=32, actor=admin)
    policies.retention_set(key=retention_specs.FAILED_EVENTS, days=3, actor=admin)
    policies.retention_set(key=retention_specs.TRANSACTION_LOG, days=33, actor=admin)
    return Site.objects.get(pk=site.pk)


def test_purge_deletes_expired_partitions_and_spares_the_unexpired_beside_them(old_site):
    site, now = old_site, timezone.now()
    edge = timebuckets.floor(
        now - timedelta(days=32), "hour"
    )  # holds now - 32 d: not wholly expired
    expired = [edge - timedelta(hours=1), edge - timedelta(hours=30)]
    for hour in [*expired, edge, edge + timedelta(hours=1)]:
        for shard in (0, 1):
            _put_site_events(site, hour, shard)
    old_day = timebuckets.floor(now - timedelta(days=5), "day")
    young_day = timebuckets.floor(now - timedelta(days=3), "day")  # holds now - 3 d
    for day in (old_day, young_day):
        cassandra_session().execute(
            prepare(INSERT_FAILED), (site.id, day, time_uuid(day, "f"), day + timedelta(hours=1))
        )
    old_log = timebuckets.floor(now - timedelta(days=33, minutes=30), "10m")
    young_log = timebuckets.floor(now - timedelta(days=33), "10m")
    for minute in (old_log, young_log):
        cassandra_session().execute(
            prepare(INSERT_LOG), (site.id, minute, 1, time_uuid(minute, "b"), minute)
        )

    run = purge.partitions_purge(now=now)

    assert run.error == "" and not run.more_left and run.finished_at is not None
    assert run.by_table["site_events_by_bucket"] == 4  # two hours, two shards each
    assert run.by_table["failed_events"] == 1 and run.by_table["transaction_log"] == 1
    assert run.deleted == 6 and run.probed > run.deleted
    for hour in expired:
        assert _site_events(site, hour, 0) == _site_events(site, hour, 1) == 0
    for hour in (edge, edge + timedelta(hours=1)):
        assert _site_events(site, hour, 0) == _site_events(site, hour, 1) == 1
    failed = "SELECT failed_id FROM {ks}.failed_events WHERE site_id = ? AND day = ?"
    assert _count(failed, (site.id, old_day)) == 0 and _count(failed, (site.id, young_day)) == 1
    log = "SELECT batch_id FROM {ks}.transaction_log WHERE site_id = ? AND minute = ? AND shard = 1"
    assert _count(log, (site.id, old_log)) == 0 and _count(log, (site.id, young_log)) == 1
    mark = PurgeWatermark.objects.get(site=site, table="site_events_by_bucket")
    assert mark.purged_through == edge

    # Nothing left to do: a second run probes nothing new and deletes nothing.
    again = purge.partitions_purge(now=now)
    assert (again.probed, again.deleted) == (0, 0)


def test_purge_is_bounded_per_run_and_continues_from_its_watermark(old_site):
    site, now = old_site, timezone.now()
    first = timebuckets.floor(now - timedelta(days=33), "hour")
    hours = [first + timedelta(hours=n) for n in range(5)]
    for hour in hours:
        _put_site_events(site, hour, 0)
    Site.objects.filter(pk=site.pk).update(event_shards=1)
    for target in purge.PURGE_TARGETS:  # only site_events_by_bucket has work left
        PurgeWatermark.objects.create(
            site=site,
            table=target.name,
            purged_through=first if target.name == "site_events_by_bucket" else now,
        )

    runs = [purge.partitions_purge(now=now, limit=2) for _ in range(2)]

    assert [(r.probed, r.deleted, r.more_left) for r in runs] == [(2, 2, True), (2, 2, True)]
    assert [_site_events(site, hour) for hour in hours] == [0, 0, 0, 0, 1]
    last = purge.partitions_purge(now=now, limit=1000)
    assert last.deleted == 1 and not last.more_left
    assert [_site_events(site, hour) for hour in hours] == [0] * 5
    assert PurgeRun.objects.count() == 3


INSERT_BUCKET_USER = """
INSERT INTO {ks}.bucket_users (site_id, granularity, bucket, user_key, counts)
VALUES (?, ?, ?, ?, ?)
"""


def test_purge_drops_per_user_count_buckets_past_their_resolutions_policy(site):
    table = "bucket_users"
    now = timezone.now()
    keep = retention_specs.SPECS[retention_specs.AGGREGATES_HOUR].default_days()  # 400 days
    edge = timebuckets.floor(now - timedelta(days=keep), "hour")
    day_edge = timebuckets.floor(now - timedelta(days=keep), "day")
    rows = [("hour", edge - timedelta(hours=1)), ("hour", edge), ("day", day_edge)]
    for granularity, bucket in rows:
        cassandra_session().execute(
            prepare(INSERT_BUCKET_USER), (site.id, granularity, bucket, "u", {"pageview": 1})
        )
    for target in purge.PURGE_TARGETS:
        start = edge - timedelta(hours=3) if target.name == f"{table}:hour" else now
        PurgeWatermark.objects.create(site=site, table=target.name, purged_through=start)

    run = purge.partitions_purge(now=now)

    assert run.by_table == {name: 0 for name in run.by_table} | {f"{table}:hour": 1}
    counts = (
        f"SELECT user_key FROM {{ks}}.{table} WHERE site_id = ? AND granularity = ? AND bucket = ?"
    )
    remaining = [_count(counts, (site.id, g, b)) for g, b in rows]
    assert remaining == [0, 1, 1]  # the hour holding now - 400 d and the day stay


def test_the_policy_lookup_costs_one_query_per_process_every_few_seconds(
    site, django_assert_max_num_queries
):
    now = timezone.now().replace(microsecond=0)
    policies.policy_days()  # warm, as any running process is
    with django_assert_max_num_queries(50) as captured:
        for n in range(3):
            events_record(
                source=Source(site=site, received_at=now),
                raw_events=[event(now - timedelta(seconds=n + 1), anon=f"v{n}")],
            )
    assert not [q for q in captured.captured_queries if "retentionpolicy" in q["sql"]]


def test_beat_runs_the_purge_hourly():
    entry = settings.CELERY_BEAT_SCHEDULE["purge-expired-partitions"]
    assert entry["task"] == "sessions_app.tasks.purge_expired_partitions"
    assert entry["schedule"] == timedelta(hours=1)


INSERT_USER_EVENT = """
INSERT INTO {ks}.user_events_by_bucket (site_id, user_key, bucket, event_id, session_id, type, ts)
VALUES (?, ?, ?, ?, ?, 'pageview', ?)
"""
USER_EVENTS = (
    "SELECT event_id FROM {ks}.user_events_by_bucket "
    "WHERE site_id = ? AND user_key = ? AND bucket = ?"
)


def _put_user_day(site: Site, user: str, day: datetime, *, counted: bool = True) -> None:
    ts = day + timedelta(hours=3)
    cassandra_session().execute(
        prepare(INSERT_USER_EVENT),
        (site.id, user, day, time_uuid(ts, user), time_uuid(ts, "s"), ts),
    )
    if not counted:
        return
    cassandra_session().execute(
        prepare(INSERT_BUCKET_USER), (site.id, "day", day, user, {"pageview": 1, "click": 1})
    )


def test_purge_names_expired_user_partitions_from_the_sealed_counts_of_their_day(old_site):
    site, now = old_site, timezone.now()
    edge = timebuckets.floor(now - timedelta(days=32), "day")  # holds now - 32 d: kept
    old = edge - timedelta(days=1)
    for user in ("ann", "bob", "cat"):
        _put_user_day(site, user, old)
    _put_user_day(site, "ann", edge)
    _put_user_day(site, "dan", old, counted=False)  # in no sealed counts: left to its TTL
    state = BucketState.objects.create(site=site, granularity="day", bucket=old, state="open")
    for target in purge.PURGE_TARGETS:
        PurgeWatermark.objects.create(site=site, table=target.name, purged_through=now)
    PurgeWatermark.objects.create(site=site, table="user_events_by_bucket", purged_through=old)

    # The day is not sealed yet: its users are not final, nothing is touched.
    waiting = purge.partitions_purge(now=now)
    assert (waiting.deleted, waiting.more_left) == (0, False)
    assert PurgeWatermark.objects.get(table="user_events_by_bucket").purged_through == old

    state.state = BucketState.SEALED
    state.save()
    # 1 count read + 2 users
    first = purge.partitions_purge(now=now, limit=3)
    assert (first.probed, first.deleted, first.more_left) == (3, 2, True)
    mark = PurgeWatermark.objects.get(table="user_events_by_bucket")
    assert (mark.purged_through, mark.cursor) == (old, "bob")
    second = purge.partitions_purge(now=now, limit=2)
    assert (second.deleted, second.by_table["user_events_by_bucket"]) == (1, 1)

    left = {u: _count(USER_EVENTS, (site.id, u, old)) for u in ("ann", "bob", "cat", "dan")}
    assert left == {"ann": 0, "bob": 0, "cat": 0, "dan": 1}
    assert _count(USER_EVENTS, (site.id, "ann", edge)) == 1
    assert PurgeWatermark.objects.get(table="user_events_by_bucket").purged_through == edge
