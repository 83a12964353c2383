"""Users directory benchmark (issue 38.5; run by bench/run.py in the bench environment, or
alone; prints JSON).

A site gets USERS users (default 100,000; `make bench BENCH_ARGS=--directory-users=1000000`
for the goal's 1 M) in the tables the Users page reads, with the collector's own
statements and rows: user_directory (tables/user_directory.rows_for; 30% identified: a
user id `cust-NNNNNNN`, the anonymous id they came with, an email trait
`first.lastN@domain`; 70% anonymous: a 32-hex anonymous id; about 6.4 rows a user), one
user_sessions summary a user (last seen spread over 30 days, a country, a device) and the
feed's entries (latest_sessions) of the newest FEED users.

Seeding is the raw driver's prepared inserts, unlogged batches of rows of one partition
(the prefix partitions) or of a few users (their own partitions; a one-node cluster owns
them all), run concurrently by SEEDERS processes: 1 M users is ~8.6 M rows. The site id is
derived from USERS and a marker row is written last, so a later run on the same keyspace
finds the users seeded and only measures (three runs: seed once).

Once the node has settled, each round times in this process, query by query: the recent
list (sessions/directory.recent_users: the feed's newest sessions, their users described)
and the search (directory_search: the first page of 50 users a prefix finds, described)
for prefixes of 1 to 9 characters of user ids, anonymous ids and emails; beside each, the
raw driver executes the same prepared statements with the same binds (the slice or the
feed's shards, then one single-partition read a user, concurrently; rows fetched, nothing
else done). The first WARMUP rounds are not counted. Goal: p95 <= 100 ms.

  DJANGO_SETTINGS_MODULE=clickstream.settings.local CASSANDRA_KEYSPACE=bench_directory \\
      python -m bench.directory [USERS] [RUNS]
(the keyspace's tables: `python manage.py sync_cassandra` with the same environment)
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import statistics
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.local")
django.setup()

from cassandra.concurrent import execute_concurrent  # noqa: E402
from cassandra.query import BatchStatement, BatchType  # noqa: E402
from django.conf import settings  # noqa: E402

from bench import SMOKE  # noqa: E402
from bench.node import settle  # noqa: E402
from bench.timing import pct, sizes  # noqa: E402
from sessions_app.domain.sessions.directory import (  # noqa: E402
    PAGE,
    SESSIONS_CAP,
    TERMS_A_USER,
    directory_search,
    recent_users,
)
from sessions_app.foundation.core.cql import cassandra_session, prepare  # noqa: E402
from sessions_app.foundation.core.ids import time_uuid  # noqa: E402
from sessions_app.foundation.tables import latest_sessions, user_directory, user_sessions  # noqa: E402

WARMUP = 1 if SMOKE else 10
GOAL_P95_MS = 100.0
TTL = 30 * 86_400
FEED = 20_000  # the newest users' sessions are in the feed (its TTL is a day)
CHUNK = 50_000  # users a seeding task writes
SEEDERS = 2  # seeding processes
# An unlogged batch carries one prefix partition's rows (at most PARTITION_ROWS) or the
# rows of USERS_TOGETHER users (their directory and user_sessions partitions): under the
# node's warnings (5 KiB, 10 partitions a batch).
PARTITION_ROWS = 30
USERS_TOGETHER = 5
MARKER = "bench-directory-seeded"  # the user key of the marker row, written last
QUERIES = {
    "user_id": ("c", "cu", "cust-00", "cust-0123"),
    "anonymous_id": ("a", "3f", "a1b", "e9c4d"),
    "email": ("ana.", "anna.m", "priya.tanaka1"),
}
FIRST = ("ana", "anna", "jonas", "priya", "lukas", "sofia", "mateo", "emma", "noah", "yuki")
LAST = ("muller", "smith", "dubois", "jansen", "rossi", "garcia", "nguyen", "tanaka")
COUNTRIES = ("DE", "US", "FR", "GB", "NL", "JP", "BR", "IN")
DEVICES = ("desktop", "mobile", "tablet")


def site_of(users: int) -> uuid.UUID:
    """The bench site of USERS users: the same id every run, so a seeded keyspace is reused."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"clickstream-bench-directory/{users}")


def _user(rng: random.Random, n: int) -> tuple[str, list[tuple[str, str]], str | None]:
    """User n: (user key, its (term, kind) pairs, user id or None)."""
    anon = f"{rng.getrandbits(128):032x}"
    if rng.random() >= 0.3:
        return anon, [(anon, user_directory.ANONYMOUS_ID)], None
    user = f"cust-{n:07d}"
    email = f"{rng.choice(FIRST)}.{rng.choice(LAST)}{n}@example.com"
    kinds = [(user, user_directory.USER_ID), (anon, user_directory.ANONYMOUS_ID)]
    return user, [*kinds, (email, user_directory.EMAIL)], user


def _session(site_id: uuid.UUID, n: int, users: int, key: str, user_id: str | None, now: datetime):
    """User n's one session: user_sessions' UPSERT parameters and its feed row (the newest
    user is n = users - 1)."""
    last = now - timedelta(seconds=(users - 1 - n) * 30 * 86_400 / users)
    started = last - timedelta(minutes=7)
    session_id = time_uuid(started, key)
    upsert = user_sessions.upsert_params(
        site_id=site_id,
        user_key=key,
        session_id=session_id,
        started_at=started,
        last_seen_at=last,
        anonymous_id=None if user_id else key,
        user_id=user_id,
        event_count=5,
        pageview_count=3,
        click_count=2,
        entry_url="https://shop.example/",
        exit_url="https://shop.example/checkout",
        converted=False,
        is_bot=False,
        ip_prefix=None,
        dimensions={"country": COUNTRIES[n % 8], "device": DEVICES[n % 3]},
        timestamp=int(last.timestamp() * 1e6),
        ttl=TTL,
    )
    feed = latest_sessions.Row(
        site_id,
        latest_sessions.feed_sentinel(key),
        time_uuid(last, str(session_id)),
        session_id,
        key,
        started,
        last,
        5,
        "https://shop.example/",
        "https://shop.example/checkout",
        False,
    )
    return upsert, feed


def _batches(
    groups: dict[Any, list[tuple[Any, tuple[Any, ...]]]], *, rows: int, together: int
) -> Iterator[BatchStatement]:
    """Unlogged batches of `together` groups' (statement, row) pairs, at most `rows` rows
    (a group's rows stay together in a batch unless it has more)."""
    batch, groups_in = BatchStatement(BatchType.UNLOGGED), 0
    for pairs in groups.values():
        if groups_in >= together or (len(batch) and len(batch) + len(pairs) > rows):
            yield batch
            batch, groups_in = BatchStatement(BatchType.UNLOGGED), 0
        for statement, row in pairs:
            if len(batch) >= rows:
                yield batch
                batch = BatchStatement(BatchType.UNLOGGED)
            batch.add(statement, row)
        groups_in += 1
    if len(batch):
        yield batch


def seed_chunk(site_id: uuid.UUID, first: int, last: int, users: int, now: datetime) -> int:
    """Write users first..last-1 (rows grouped by partition, in batches); return rows."""
    term = prepare(user_directory.INSERT, idempotent=True, write=True)
    upsert = prepare(user_sessions.with_dimensions(user_sessions.UPSERT), idempotent=True)
    feed = prepare(latest_sessions.INSERT, idempotent=True, write=True)
    partitions: dict[Any, list[tuple[Any, tuple[Any, ...]]]] = defaultdict(list)
    own: dict[Any, list[tuple[Any, tuple[Any, ...]]]] = defaultdict(list)  # a user's rows
    rng = random.Random(first)  # noqa: S311 - bench data
    for n in range(first, last):
        key, terms, user_id = _user(rng, n)
        for text, kind in terms:
            for row in user_directory.rows_for(
                site_id, text=text, user_key=key, kind=kind, ttl=TTL
            ):
                if row.prefix.startswith(user_directory.KEY_PARTITION):
                    own[key].append((term, row))
                else:
                    partitions[row.prefix].append((term, row))
        summary, entry = _session(site_id, n, users, key, user_id, now)
        own[key].append((upsert, summary))
        if n >= users - FEED:
            partitions[("feed", entry.sentinel)].append((feed, entry))
    batches = [
        *_batches(partitions, rows=PARTITION_ROWS, together=1),
        *_batches(own, rows=PARTITION_ROWS, together=USERS_TOGETHER),
    ]
    execute_concurrent(
        cassandra_session(), [(b, None) for b in batches], concurrency=32, raise_on_first_error=True
    )
    return sum(len(b) for b in batches)


def seed(site_id: uuid.UUID, users: int) -> int:
    """Write the users' rows (SEEDERS processes, CHUNK users a task), then the marker (the
    number of users and rows); return how many rows."""
    now = datetime.now(UTC)
    spans = [(site_id, s, min(s + CHUNK, users), users, now) for s in range(0, users, CHUNK)]
    with multiprocessing.get_context("spawn").Pool(SEEDERS) as pool:
        written = sum(pool.starmap(seed_chunk, spans))
    marker = user_directory.Row(
        site_id,
        user_directory.KEY_PARTITION + MARKER,
        f"{users} {written}",
        MARKER,
        user_directory.USER_ID,
        TTL,
    )
    cassandra_session().execute(prepare(user_directory.INSERT, write=True), marker)
    return written


def seeded(site_id: uuid.UUID, users: int) -> int | None:
    """The rows a run before wrote for every user of this site (its marker row), or None."""
    rows = cassandra_session().execute(
        prepare(user_directory.SELECT_TERMS), (site_id, user_directory.KEY_PARTITION + MARKER, 1)
    )
    for row in rows:
        count, written = row["term"].split()
        if int(count) == users:
            return int(written)
    return None


def _raw_describe(keys: list[str], site_id: uuid.UUID) -> int:
    """The driver alone: each user's sessions, newest first (up to the cap), concurrently."""
    describe = prepare(user_sessions.with_dimensions(user_sessions.SELECT_DESCRIBE))
    session = cassandra_session()
    futures = [session.execute_async(describe, (site_id, k, SESSIONS_CAP + 1)) for k in keys]
    return sum(len(list(f.result())) for f in futures)


def _raw_search(site_id: uuid.UUID, query: str) -> int:
    """The search's slice, then its users described: the raw driver, same binds."""
    bounds = user_directory.search_bounds(query)
    assert bounds is not None
    rows = cassandra_session().execute(
        prepare(user_directory.SEARCH), (site_id, *bounds, PAGE * TERMS_A_USER)
    )
    keys = list(dict.fromkeys(r["user_key"] for r in rows))[:PAGE]
    return _raw_describe(keys, site_id)


def _raw_recent(site_id: uuid.UUID) -> int:
    """The feed's shards (as feed_latest reads them), then the users described."""
    statement = prepare(latest_sessions.SELECT_LATEST)
    session = cassandra_session()
    for sessions in (PAGE * 2, PAGE * 4):  # as recent_users: a second read only if too few
        futures = [
            session.execute_async(statement, (site_id, s, sessions * 3))
            for s in range(settings.FEED_SHARDS)
        ]
        rows = sorted((r for f in futures for r in f.result()), key=lambda r: r["last_seen_at"])
        keys = list(dict.fromkeys(r["user_key"] for r in reversed(rows)))[:PAGE]
        if len(keys) >= PAGE:
            break
    return _raw_describe(keys, site_id)


def _calls(site_id: uuid.UUID) -> dict[str, tuple[str, Callable[[], Any], Callable[[], Any]]]:
    """Each timed query: (its group, the app's call, the raw driver's)."""
    calls: dict[str, tuple[str, Callable[[], Any], Callable[[], Any]]] = {
        "recent": ("recent", lambda: recent_users(site_id=site_id), lambda: _raw_recent(site_id))
    }
    for group, queries in QUERIES.items():
        for q in queries:
            calls[q] = (
                group,
                partial(directory_search, site_id=site_id, query=q),
                partial(_raw_search, site_id, q),
            )
    return calls


def measure(site_id: uuid.UUID, runs: int) -> dict[str, Any]:
    """Interleaved rounds (app, then raw, query by query); the figures of each group and all."""
    app: dict[str, list[float]] = defaultdict(list)
    raw: dict[str, list[float]] = defaultdict(list)
    found: dict[str, int] = {}
    for round_ in range(WARMUP + runs):
        for name, (group, app_call, raw_call) in _calls(site_id).items():
            began = time.perf_counter()
            found[name] = len(app_call())
            app_ms = (time.perf_counter() - began) * 1000
            began = time.perf_counter()
            raw_call()
            raw_ms = (time.perf_counter() - began) * 1000
            if round_ >= WARMUP:
                for key in (group, "all"):
                    app[key].append(app_ms)
                    raw[key].append(raw_ms)
    return {
        "users_found": found,
        **{f"{g}_p95_ms": [round(pct(app[g], 0.95), 2), round(pct(raw[g], 0.95), 2)] for g in app},
        "searches": len(app["all"]),
        "app_p50_ms": round(statistics.median(app["all"]), 2),
        "app_p95_ms": round(pct(app["all"], 0.95), 2),
        "raw_p50_ms": round(statistics.median(raw["all"]), 2),
        "raw_p95_ms": round(pct(raw["all"], 0.95), 2),
    }


def main() -> None:
    users, runs = sizes(100_000, 20)
    site_id = site_of(users)
    began = time.monotonic()
    rows = seeded(site_id, users)
    reused = rows is not None
    if rows is None:
        rows = seed(site_id, users)
    seeded_s = time.monotonic() - began
    settled_s = settle()
    print(
        json.dumps(
            {
                "users": users,
                "rows": rows,
                "reused": reused,
                "seeded_s": round(seeded_s, 1),
                "settled_s": round(settled_s, 1),
                **measure(site_id, runs),
                "goal_p95_ms": GOAL_P95_MS,
            }
        )
    )


if __name__ == "__main__":
    main()
