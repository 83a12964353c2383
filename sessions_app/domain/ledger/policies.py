"""Retention policies as stored: the days of each, cached per process, set by admins."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction

from sessions_app.domain.ledger.sites import admin_action_record
from sessions_app.foundation.core import stamps
from sessions_app.foundation.core.cql import (
    cassandra_session,
    keyspace,
    prepare,
)
from sessions_app.foundation.models import RetentionPolicy
from sessions_app.foundation.tables import registry, replay_assets, replay_chunks, retention_specs
from sessions_app.foundation.tables.retention_specs import SPECS

# Replays are kept per site (its "Keep replays (days)"), not by a policy: the tables that
# keep them, and the most days a site may ask for.
REPLAY_TABLES = (replay_chunks.SPEC.name, replay_assets.SPEC.name)
REPLAY_MAX_DAYS = replay_chunks.MAX_RETENTION_DAYS
# What retention_set raises for a value out of bounds, for the pages that show it.
RetentionError = retention_specs.RetentionError

SELECT_TABLE_OPTIONS = """
SELECT table_name, compaction, default_time_to_live, gc_grace_seconds
FROM system_schema.tables WHERE keyspace_name = ?
"""


@dataclass(frozen=True)
class PolicyRow:
    """A retention policy as the admin page shows it."""

    key: str
    label: str
    tables: tuple[str, ...]
    days: int
    default_days: int
    min_days: int
    min_reason: str
    max_days: int
    updated_by: str | None
    updated_at: datetime | None


def policy_label(key: str) -> str | None:
    """The policy's label, or None when no policy has that key."""
    spec = SPECS.get(key)
    return spec.label if spec else None


def retention_policies() -> list[PolicyRow]:
    """Return every retention policy: its stored value, or the settings default."""
    stored = {p.key: p for p in RetentionPolicy.objects.select_related("updated_by")}
    rows = []
    for key, spec in retention_specs.SPECS.items():
        policy = stored.get(key)
        low, why = spec.min_days()
        rows.append(
            PolicyRow(
                key=key,
                label=spec.label,
                tables=registry.tables_of_policy(spec.key),
                days=policy.days if policy else spec.default_days(),
                default_days=spec.default_days(),
                min_days=low,
                min_reason=why,
                max_days=spec.max_days,
                updated_by=(
                    policy.updated_by.get_username() if policy and policy.updated_by else None
                ),
                updated_at=policy.updated_at if policy else None,
            )
        )
    return rows


@dataclass(frozen=True)
class TableOptions:
    """The retention-related options Cassandra reports for one table."""

    table: str
    compaction: str
    window: str
    default_time_to_live: int
    gc_grace_seconds: int


def live_table_options() -> list[TableOptions]:
    """Return compaction, default TTL and gc_grace of every table of the keyspace."""
    rows = cassandra_session().execute(prepare(SELECT_TABLE_OPTIONS), (keyspace(),))
    result = []
    for row in rows:
        compaction = dict(row["compaction"] or {})
        window = (
            f"{compaction.get('compaction_window_size')} {compaction.get('compaction_window_unit')}"
            if "compaction_window_unit" in compaction
            else ""
        )
        result.append(
            TableOptions(
                table=row["table_name"],
                compaction=str(compaction.get("class", "")).rsplit(".", 1)[-1],
                window=window,
                default_time_to_live=row["default_time_to_live"],
                gc_grace_seconds=row["gc_grace_seconds"],
            )
        )
    return sorted(result, key=lambda t: t.table)


def retention_set(*, key: str, days: int, actor: Any) -> RetentionPolicy:
    """Set a retention policy; new writes use it, rows already written keep their TTL.

    Raises retention_specs.RetentionError (with the bound and the reason) for a value
    outside the policy's bounds.
    """
    retention_specs.validate_days(key, days)
    with transaction.atomic():
        _check_sessions_outlive_events(key, days)
        current = RetentionPolicy.objects.select_for_update().filter(key=key).first()
        previous = current.days if current else retention_specs.SPECS[key].default_days()
        policy, _ = RetentionPolicy.objects.update_or_create(
            key=key, defaults={"days": days, "updated_by": actor}
        )
        admin_action_record(
            actor=actor,
            action="retention.set",
            target=f"retention {key}",
            details={"days": days, "previous": previous},
        )
    invalidate()
    return policy


def _check_sessions_outlive_events(key: str, days: int) -> None:
    """Sessions are kept at least as long as raw events: an erasure finds a user's events
    through their sessions, and a session summary should never point at events that
    outlive it unseen."""
    current = {
        row.key: row.days
        for row in RetentionPolicy.objects.select_for_update().filter(
            key__in=(retention_specs.RAW_EVENTS, retention_specs.SESSIONS)
        )
    }
    raw = current.get(
        retention_specs.RAW_EVENTS, retention_specs.SPECS[retention_specs.RAW_EVENTS].default_days()
    )
    sessions = current.get(
        retention_specs.SESSIONS, retention_specs.SPECS[retention_specs.SESSIONS].default_days()
    )
    if key == retention_specs.SESSIONS and days < raw:
        raise retention_specs.RetentionError(
            f"sessions: at least {raw} days: no shorter than raw events ({raw} days), "
            "which are found through their sessions"
        )
    if key == retention_specs.RAW_EVENTS and days > sessions:
        raise retention_specs.RetentionError(
            f"raw events: at most {sessions} days: no longer than sessions ({sessions} days); "
            "raise that first"
        )


# Seconds a process reuses the policies it read (the collector reads them per batch).
POLICY_CACHE_SECONDS = 10
_lock = threading.Lock()
_cache: tuple[float, dict[str, int]] | None = None


def invalidate() -> None:
    """Forget this process's cached policies (other processes refresh within seconds)."""
    global _cache
    _cache = None


def _load() -> dict[str, int]:
    days = {key: spec.default_days() for key, spec in SPECS.items()}
    days.update(RetentionPolicy.objects.filter(key__in=list(SPECS)).values_list("key", "days"))
    return days


def policy_days() -> dict[str, int]:
    """Return the days of every policy, re-read from SQL at most every few seconds."""
    global _cache
    current = _cache
    if current is None or time.monotonic() - current[0] > POLICY_CACHE_SECONDS:
        with _lock:
            current = _cache
            if current is None or time.monotonic() - current[0] > POLICY_CACHE_SECONDS:
                current = (time.monotonic(), _load())
                _cache = current
    return current[1]


def ttl_seconds(key: str) -> int:
    """Return the TTL new rows under policy `key` are written with."""
    return policy_days()[key] * 86_400


def derived_ttl_seconds(oldest: datetime, *, ceiling: int) -> int:
    """Return the TTL of a copy of raw rows' user keys or session ids, the oldest from an
    event at `oldest`: it ends no later than those rows do (written MAX_AHEAD before their
    event at the earliest, under the raw events' or the sessions' policy, the shorter: an
    erasure finds the raw rows through the sessions), and at most `ceiling`. Zero or
    less: the rows may be gone already; write no copy."""
    keep = min(ttl_seconds(retention_specs.RAW_EVENTS), ttl_seconds(retention_specs.SESSIONS))
    ends = oldest - stamps.MAX_AHEAD + timedelta(seconds=keep)
    return min(ceiling, int((ends - datetime.now(UTC)).total_seconds()))


def longest_ttl_seconds(keys: tuple[str, ...]) -> int:
    """Return the longest TTL of these policies (rows that must outlive all of them)."""
    return max(ttl_seconds(k) for k in keys)
