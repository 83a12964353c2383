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

from sessions_app import buckets, retention, selectors, services
from sessions_app.cassandra import keyspace, prepare, session
from sessions_app.collector.pipeline import Source, events_record
from sessions_app.models import AdminAction, RetentionPolicy, Site
from tests.collector.conftest import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])
DAY = 86_400


@pytest.fixture(autouse=True)
def _fresh_policies() -> Iterator[None]:
    """Drop cached policies around each test: saved rows are rolled back after it."""
    retention.invalidate()
    yield
    retention.invalidate()


@pytest.fixture
def admin() -> User:
    user = User.objects.create_user("keeper", password="pw-keeper-123")
    user.groups.add(Group.objects.get_or_create(name="admin")[0])
    return user


def _ttl(cql: str, params: tuple) -> int:
    row = session().execute(prepare(cql), params).one()
    assert row is not None, cql
    return next(iter(row.values()))


def _ttls(site: Site, *, anon: str, at: datetime) -> dict[str, int]:
    """Return the TTL of one event's row in every raw table and of its session summary."""
    hour = buckets.floor(at, "hour")
    row = (
        session()
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
    by_user = buckets.floor(at, settings.USER_EVENTS_BUCKET)
    ttls = {"site_events_by_bucket": min(r["ttl"] for r in mine)}
    ttls["user_events_by_bucket"] = _ttl(
        "SELECT TTL(type) FROM {ks}.user_events_by_bucket "
        "WHERE site_id = ? AND user_key = ? AND bucket = ? LIMIT 1",
        (site.id, anon, by_user),
    )
    sessions = (
        session()
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
        "SELECT TTL(type) FROM {ks}.session_events WHERE session_id = ? LIMIT 1",
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

    services.retention_set(key=retention.RAW_EVENTS, days=45, actor=admin)
    services.retention_set(key=retention.SESSIONS, days=90, actor=admin)
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
        for r in session()
        .execute(
            prepare(
                "SELECT TTL(type) AS ttl FROM {ks}.site_events_by_bucket "
                "WHERE site_id = ? AND bucket = ? AND shard = 0"
            ),
            (site.id, buckets.floor(now - timedelta(seconds=20), "hour")),
        )
        .all()
    )
    if buckets.floor(now - timedelta(seconds=20), "hour") == buckets.floor(
        now - timedelta(seconds=10), "hour"
    ):
        assert _near(hour_ttls[0], 45) and _near(hour_ttls[-1], 400)


def test_log_failed_events_and_aggregates_follow_their_policies(site, admin):
    now = timezone.now().replace(microsecond=0)
    services.retention_set(key=retention.TRANSACTION_LOG, days=3, actor=admin)
    services.retention_set(key=retention.FAILED_EVENTS, days=5, actor=admin)
    services.retention_set(key=retention.AGGREGATES_HOUR, days=500, actor=admin)
    hour = buckets.floor(now - timedelta(hours=2), "hour")
    received = hour + timedelta(minutes=20)
    result = events_record(
        source=Source(site=site, received_at=received),
        raw_events=[
            event(hour + timedelta(minutes=5), anon="agg"),
            {"id": "bad", "type": "pageview"},  # rejected: no ts
        ],
    )
    assert result.accepted == 1 and len(result.rejected) == 1
    log_bucket = buckets.floor(received, "10m")
    time.sleep(0.5)  # the collector does not wait for the applied mark
    log_rows = [
        r
        for shard in range(settings.TXLOG_SHARDS)
        for r in session()
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
        (site.id, buckets.floor(received, "day")),
    )
    assert _near(failed, 5)
    services.bucket_seal(site_id=site.id, hour=hour, now=now)
    sealed = _ttl(
        "SELECT TTL(events) FROM {ks}.bucket_aggregates "
        "WHERE site_id = ? AND granularity = 'hour' AND bucket = ?",
        (site.id, hour),
    )
    assert _near(sealed, 500)


@pytest.mark.parametrize(
    ("key", "days", "message"),
    [
        (retention.RAW_EVENTS, 10, "at least 32 days: events up to MAX_EVENT_AGE_DAYS (30) old"),
        (retention.RAW_EVENTS, 2000, "at most 1098 days"),
        (retention.AGGREGATES_HOUR, 100, "12-month rolling counters"),
        (retention.FAILED_EVENTS, 0, "at least 1 days"),
        (retention.SESSIONS, 4000, "at most 3660 days"),
        ("nonsense", 10, "unknown policy"),
    ],
)
def test_policies_outside_their_bounds_are_refused_with_the_reason(admin, key, days, message):
    with pytest.raises(retention.RetentionError, match=re.escape(message)):
        services.retention_set(key=key, days=days, actor=admin)
    assert not RetentionPolicy.objects.exists()
    assert not AdminAction.objects.exists()


def test_policy_changes_are_audited_with_the_previous_value(admin):
    services.retention_set(key=retention.RAW_EVENTS, days=90, actor=admin)
    services.retention_set(key=retention.RAW_EVENTS, days=60, actor=admin)
    actions = list(AdminAction.objects.order_by("id"))
    assert [(a.actor, a.action, a.target) for a in actions] == [
        (admin, "retention.set", "retention raw_events"),
        (admin, "retention.set", "retention raw_events"),
    ]
    assert actions[0].details == {"days": 90, "previous": 400}
    assert actions[1].details == {"days": 60, "previous": 90}
    assert RetentionPolicy.objects.get(key="raw_events").updated_by == admin


# --- table options -------------------------------------------------------------------


def _options() -> dict[str, selectors.TableOptions]:
    return {t.table: t for t in selectors.table_options()}


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
    for spec in retention.SPECS.values():
        for table in spec.tables:
            backstop = options[table].default_time_to_live
            assert backstop >= spec.max_days * DAY >= spec.default_days() * DAY, table
    assert options["transaction_log"].default_time_to_live == 90 * DAY
    assert options["latest_sessions"].default_time_to_live == DAY
    assert {t.gc_grace_seconds for t in options.values()} == {settings.CASSANDRA_GC_GRACE_SECONDS}


def test_sync_cassandra_restores_options_on_existing_tables():
    session().execute(
        f"ALTER TABLE {keyspace()}.failed_events WITH gc_grace_seconds = 1 "
        "AND default_time_to_live = 60 AND compaction = {'class': 'SizeTieredCompactionStrategy'}"
    )
    assert _options()["failed_events"].gc_grace_seconds == 1
    call_command("sync_cassandra", database="cassandra", verbosity=0)
    restored = _options()["failed_events"]
    assert restored.gc_grace_seconds == settings.CASSANDRA_GC_GRACE_SECONDS
    assert restored.default_time_to_live == 366 * DAY
    assert (restored.compaction, restored.window) == ("TimeWindowCompactionStrategy", "1 DAYS")
