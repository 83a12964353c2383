"""Sealed user sets: per site and bucket, the users who were active and, per event name,
the users who did it, as roaring bitmaps of per-site user numbers (docs/retention.md).

An hour's sets are counted from its tally as user keys (`KeySets`, no I/O); its seal
numbers the keys (user_numbers: KEYS_PER_READ users looked up a request, a lightweight
transaction per user seen for the first time) and stores bitmaps (`Sets`); days and
months are the unions of their children. Retention cohorts, lifecycle and stickiness
(sessions_app/features/cohorts) read a few of these rows per period instead of raw events.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from cassandra.concurrent import execute_concurrent
from pyroaring import BitMap

from sessions_app.domain.aggregates.tally import Tally
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, execute_windowed, prepare
from sessions_app.foundation.tables import user_number_keys, user_numbers, user_sets

ACTIVE = ""  # the set of every active user (any human event)
GOAL = "goal:"  # a goal's set: "goal:<id>", the users who reached the goal (`goal_set`)
# Event names kept per bucket: those with the most users (then by name). A bucket that
# had more is marked incomplete and so is every bucket merged from it; an event cohort
# over one says so.
MAX_NAMES = 64
MAX_KEYS_READ = 500  # the most user keys a cohort cell lists


@dataclass
class KeySets:
    """An hour's sets as user keys (what a tally gives)."""

    members: dict[str, set[str]] = field(default_factory=dict)
    complete: bool = True


@dataclass
class Sets:
    """A bucket's sets as user numbers (what is stored)."""

    members: dict[str, BitMap] = field(default_factory=dict)
    complete: bool = True

    def users(self, name: str = ACTIVE) -> BitMap:
        return self.members.get(name) or BitMap()


def goal_set(goal_id: int) -> str:
    """The name of a goal's set of users (a cohort's `first_event` / `return_event`)."""
    return f"{GOAL}{goal_id}"


def hour_sets(counted: Tally, goal_users: dict[int, set[str]] | None = None) -> KeySets:
    """The hour's active users (those with a human event) and, for each event key (a
    custom event's name, else its type), which of them did it; for each goal reached in
    the hour (`goal_users`, the goals product's count: aggregates/goals.goal_users), the
    set "goal:<id>" of its users."""
    by_key: dict[str, set[str]] = {}
    for user, keys in counted.users.items():
        for key in keys:
            found = by_key.get(key)
            if found is None:
                found = by_key[key] = set()
            found.add(user)
    return _key_sets(counted.humans, by_key, goal_users)


def rows_sets(
    rows: Iterable[Mapping[str, Any]], goal_users: dict[int, set[str]] | None = None
) -> KeySets:
    """`hour_sets` of raw rows (user_key, type, name, is_bot) with nothing else counted:
    what an hour's sets cost when no tally is there to share (a goal's backfill, the
    cohorts' cold read); equal to `hour_sets(tally.tally(rows))`
    (tests/aggregates/test_usersets.py)."""
    humans: set[str] = set()
    by_key: dict[str, set[str]] = {}
    for row in rows:
        user, kind = row["user_key"], row["type"]
        key = (row["name"] or kind) if kind == "custom" else kind
        found = by_key.get(key)
        if found is None:
            found = by_key[key] = set()
        found.add(user)
        if not row["is_bot"]:
            humans.add(user)
    return _key_sets(humans, by_key, goal_users)


def _key_sets(
    humans: set[str], by_key: dict[str, set[str]], goal_users: dict[int, set[str]] | None
) -> KeySets:
    """The active set, each event key's users who are active (an event named "goal:…" is
    no goal: left out), each goal's."""
    members: dict[str, set[str]] = {ACTIVE: set(humans)}
    for key, users in by_key.items():
        if not key.startswith(GOAL):
            kept = users & humans
            if kept:
                members[key] = kept
    for goal_id, users in (goal_users or {}).items():
        members[goal_set(goal_id)] = users & humans
    return KeySets(*_bounded(members))


def _bounded(members: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The active set, every goal's set (at most goals.defs.MAX_GOALS) and the MAX_NAMES
    event sets with the most users; whether that is all."""
    names = sorted(
        (n for n in members if n != ACTIVE and not n.startswith(GOAL)),
        key=lambda n: (-len(members[n]), n),
    )
    kept = {ACTIVE: members[ACTIVE]}
    kept.update((n, members[n]) for n in members if n.startswith(GOAL))
    kept.update((n, members[n]) for n in names[:MAX_NAMES])
    return kept, len(names) <= MAX_NAMES


def sets_merge(parts: list[Sets]) -> Sets:
    """The union of the children's sets (a day from its hours, a month from its days)."""
    found: dict[str, list[BitMap]] = {ACTIVE: []}
    for part in parts:
        for name, users in part.members.items():
            found.setdefault(name, []).append(users)
    # One many-way union a set (roaring's own), never the children's bitmaps themselves.
    members = {name: BitMap.union(BitMap(), *sets) for name, sets in found.items()}
    kept, complete = _bounded(members)
    return Sets(kept, complete and all(p.complete for p in parts))


def numbered(site_id: uuid.UUID, value: KeySets) -> Sets:
    """An hour's key sets as number sets, numbering the users seen for the first time."""
    return bitmaps(value, numbers_of(site_id, value.members.get(ACTIVE, set()), assign=True))


def bitmaps(value: KeySets, numbers: Mapping[str, int]) -> Sets:
    """Key sets as number sets (`numbers` holds every active user's). Every set is within
    the active one (hour_sets keeps only active users), so one as large is the same set:
    its bitmap is a copy, no user looked up again."""
    number = numbers.__getitem__
    active_keys = value.members.get(ACTIVE, set())
    active = BitMap(map(number, active_keys))
    members = {
        name: active
        if name == ACTIVE
        else BitMap(active)
        if len(keys) == len(active_keys)
        else BitMap(map(number, keys))
        for name, keys in value.members.items()
    }
    return Sets(members, value.complete)


def numbers_of(site_id: uuid.UUID, keys: Iterable[str], *, assign: bool) -> dict[str, int]:
    """The users' numbers on the site; with `assign`, the ones without get the next free
    numbers (a concurrent seal that numbered a user first wins: its number is used)."""
    wanted = sorted(set(keys))
    select = prepare(user_numbers.SELECT_NUMBERS)
    step = user_numbers.KEYS_PER_READ
    work = [(select, (site_id, wanted[at : at + step])) for at in range(0, len(wanted), step)]
    found: dict[str, int] = {}
    for _, rows in execute_concurrent(cassandra_session(), work, concurrency=32):
        found.update((row["user_key"], row["number"]) for row in rows)
    missing = [key for key in wanted if key not in found]
    if assign and missing:
        found.update(_numbers_assign(site_id, missing))
    return found


def _numbers_assign(site_id: uuid.UUID, keys: list[str]) -> dict[str, int]:
    first = _block_take(site_id, len(keys))
    insert = prepare(user_numbers.INSERT_NEW, write=True)
    ttl = user_numbers.TTL_SECONDS
    work = [(insert, (site_id, key, first + i, ttl)) for i, key in enumerate(keys)]
    results = execute_concurrent(cassandra_session(), work, concurrency=64)
    assigned: dict[str, int] = {}
    reverse = prepare(user_number_keys.UPSERT, idempotent=True, write=True)
    reverse_work = []
    for (_, (site, key, number, _)), (_, rows) in zip(work, results, strict=True):
        row = rows.one()
        if row["[applied]"]:
            assigned[key] = number
            block = number >> user_number_keys.BLOCK_BITS
            reverse_work.append((reverse, (site, block, number, key, ttl)))
        else:
            assigned[key] = row["number"]
    execute_windowed(reverse_work)
    return assigned


def _block_take(site_id: uuid.UUID, n: int) -> int:
    """Take n consecutive free numbers of the site (compare-and-set on its NEXT row)."""
    session, ttl = cassandra_session(), user_numbers.TTL_SECONDS
    select = prepare(user_numbers.SELECT_NUMBER)
    while True:
        row = session.execute(select, (site_id, user_numbers.NEXT)).one()
        if row is None:
            insert = prepare(user_numbers.INSERT_NEW, write=True)
            if session.execute(insert, (site_id, user_numbers.NEXT, n, ttl)).one()["[applied]"]:
                return 0
            continue
        current = row["number"]
        move = prepare(user_numbers.NEXT_MOVE, write=True)
        params = (ttl, current + n, site_id, user_numbers.NEXT, current)
        if session.execute(move, params).one()["[applied]"]:
            return int(current)


def keys_of(site_id: uuid.UUID, numbers: Iterable[int]) -> dict[int, str]:
    """The user keys of these numbers (at most MAX_KEYS_READ: a cell's first users)."""
    by_block: dict[int, list[int]] = {}
    for number in sorted(numbers)[:MAX_KEYS_READ]:
        by_block.setdefault(number >> user_number_keys.BLOCK_BITS, []).append(number)
    select = prepare(user_number_keys.SELECT_KEYS)
    work = [(select, (site_id, block, wanted)) for block, wanted in by_block.items()]
    found: dict[int, str] = {}
    for _, rows in execute_concurrent(cassandra_session(), work, concurrency=32):
        found.update((row["number"], row["user_key"]) for row in rows)
    return found


def sets_write(
    *,
    site_id: uuid.UUID,
    granularity: str,
    bucket: datetime,
    value: KeySets | Sets,
    ttl: int,
    now: datetime,
) -> None:
    """Overwrite a bucket's sets: the active row lists the names kept (older rows of other
    names stay until their TTL, unread). A day's write also rewrites its week's. `now` is
    not used: these rows are written at the driver's time."""
    sets = numbered(site_id, value) if isinstance(value, KeySets) else value
    upsert = prepare(user_sets.UPSERT, idempotent=True, write=True)
    execute_windowed([(upsert, (*row, ttl)) for row in _rows(site_id, granularity, bucket, sets)])
    if granularity == "day":
        week_write(site_id=site_id, day=bucket, ttl=ttl)


def _rows(
    site_id: uuid.UUID, granularity: str, bucket: datetime, sets: Sets
) -> list[tuple[Any, ...]]:
    """A bucket's stored rows (without the TTL): one a set, the active one listing the
    names kept."""
    names = {n for n in sets.members if n != ACTIVE}
    members = {ACTIVE: BitMap(), **sets.members}
    return [
        (
            site_id,
            granularity,
            bucket,
            name,
            _blob(users),
            names if name == ACTIVE else None,
            sets.complete,
        )
        for name, users in members.items()
    ]


def week_write(*, site_id: uuid.UUID, day: datetime, ttl: int) -> None:
    """Rewrite the sets of the day's ISO week as the union of its stored days (a weekly
    cohort reads one row a week instead of seven).

    Written at the time the days were read: of two rollups of the same week racing, the
    write of the one that read later wins, and it saw every day row written before. It
    expires `ttl` after its first day ended, never after one of its days (each was
    written with `ttl` once it ended): a reader finding no week reads its days."""
    week = timebuckets.floor(day, "week")
    read_at = time.time_ns() // 1_000
    left = int((week + timedelta(days=1)).timestamp()) + ttl - read_at // 1_000_000
    if left <= 0:
        return
    days = timebuckets.buckets_between(week, timebuckets.next_start(week, "week"), "day")
    found = sets_read_many(site_id=site_id, buckets=[("day", d) for d in days], names=None)
    sets = sets_merge(list(found.values()))
    upsert = prepare(user_sets.UPSERT_AT, idempotent=True, write=True)
    execute_windowed(
        [(upsert, (*row, read_at, left)) for row in _rows(site_id, "week", week, sets)]
    )


def _blob(users: BitMap) -> bytes:
    users.run_optimize()
    return bytes(users.serialize())


def _sets_of(rows: list[dict[str, Any]]) -> Sets | None:
    active = next((r for r in rows if r["name"] == ACTIVE), None)
    if active is None:
        return None
    kept = set(active["names"] or ())
    members = {
        str(r["name"]): BitMap.deserialize(r["users"])
        for r in rows
        if r["name"] == ACTIVE or r["name"] in kept
    }
    return Sets(members, bool(active["complete"]))


def sets_read_many(
    *, site_id: uuid.UUID, buckets: list[tuple[str, datetime]], names: list[str] | None
) -> dict[tuple[str, datetime], Sets]:
    """Several buckets' stored sets (the active set and `names`; None: every set), read
    concurrently; a bucket without any is left out."""
    work: list[tuple[Any, tuple[Any, ...]]]
    if names is None:
        select = prepare(user_sets.SELECT_BUCKET)
        work = [(select, (site_id, g, b)) for g, b in buckets]
    else:
        select = prepare(user_sets.SELECT_NAMES)
        wanted = sorted({ACTIVE, *names})
        work = [(select, (site_id, g, b, wanted)) for g, b in buckets]
    found: dict[tuple[str, datetime], Sets] = {}
    results = execute_concurrent(cassandra_session(), work, concurrency=64)
    for key, (_, rows) in zip(buckets, results, strict=True):
        sets = _sets_of(list(rows))
        if sets is not None:
            found[key] = sets
    return found


def user_remove(
    *, site_id: uuid.UUID, number: int, buckets: list[tuple[str, datetime]]
) -> tuple[int, int]:
    """Remove one user number from every stored set of these buckets (erasure), each row
    keeping the time it had left; a set that cannot be read (damaged, or of a format no
    longer known) is deleted, as it may hold the user. Return how many rows changed, and
    how many of them were deleted unread."""
    session = cassandra_session()
    update = prepare(user_sets.UPDATE_USERS, idempotent=True, write=True)
    delete = prepare(user_sets.DELETE_ROW, idempotent=True, write=True)
    select = prepare(user_sets.SELECT_ERASED)
    work: list[tuple[Any, tuple[Any, ...]]] = []
    unreadable = 0
    for granularity, bucket in buckets:
        for row in session.execute(select, (site_id, granularity, bucket)):
            key = (site_id, granularity, bucket, row["name"])
            try:
                users = BitMap.deserialize(row["users"] or b"")
            except (ValueError, IndexError, OverflowError):
                work.append((delete, key))
                unreadable += 1
                continue
            if number in users and row["ttl"]:
                users.discard(number)
                work.append((update, (row["ttl"], _blob(users), *key)))
    execute_windowed(work)
    return len(work), unreadable


def numbers_scanned(site_id: uuid.UUID, keys: Iterable[str]) -> dict[str, int]:
    """The numbers of these keys found in the reverse rows, every block of the site read
    (erasure of a user whose number row lost its number: slow, and rare)."""
    wanted, found = set(keys), {}
    row = (
        cassandra_session()
        .execute(prepare(user_numbers.SELECT_NUMBER), (site_id, user_numbers.NEXT))
        .one()
    )
    last_block = int(row["number"] or 0) >> user_number_keys.BLOCK_BITS if row else 0
    select = prepare(user_number_keys.SELECT_BLOCK)
    for block in range(last_block + 1):
        statement = select.bind((site_id, block))
        statement.fetch_size = 5000
        for entry in cassandra_session().execute(statement):
            if entry["user_key"] in wanted:
                found[entry["user_key"]] = entry["number"]
    return found


def key_forget(site_id: uuid.UUID, key: str) -> None:
    """Delete a user's number row by its key alone (one whose number cannot be read)."""
    statement = prepare(user_numbers.DELETE_KEY, idempotent=True, write=True)
    cassandra_session().execute(statement, (site_id, key))


def number_forget(site_id: uuid.UUID, key: str, number: int) -> None:
    """Delete a user's number both ways (erasure)."""
    key_forget(site_id, key)
    cassandra_session().execute(
        prepare(user_number_keys.DELETE_NUMBER, idempotent=True, write=True),
        (site_id, number >> user_number_keys.BLOCK_BITS, number),
    )
