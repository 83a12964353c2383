"""Users directory benchmark (issue 38.5; run by bench/run.py in the bench environment, or
alone; prints JSON).

A fresh site gets USERS users (default 1,000,000) in user_directory, written with the
collector's own INSERT and rows (tables/user_directory.rows_for): 30% identified (a user
id `cust-NNNNNNN`, the anonymous id they came with, an email trait `first.lastN@domain`),
70% anonymous (a 32-hex anonymous id): about 7 M rows. Once the node has settled, the
search (sessions/directory.directory_match: the first page of 50 users a prefix finds) is
timed in this process for prefixes of 1 to 8 characters of every kind, and beside it the
raw driver executes the same prepared statement with the same binds (rows fetched,
nothing else done). Rounds interleave the two; the first WARMUP rounds are not counted.
Goal: p95 ≤ 100 ms. A page of the Users page also describes its 50 users from their
newest session (two single-partition reads each, concurrent): not part of this figure.

  DJANGO_SETTINGS_MODULE=clickstream.settings.local CASSANDRA_KEYSPACE=bench_directory \\
      python -m bench.directory [USERS] [RUNS]
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.local")
django.setup()

from cassandra.concurrent import execute_concurrent  # noqa: E402

from bench.node import settle  # noqa: E402
from bench.timing import fresh_site, pct, sizes  # noqa: E402
from sessions_app.core.cql import cassandra_session, prepare  # noqa: E402
from sessions_app.sessions.directory import PAGE, TERMS_A_USER, directory_match  # noqa: E402
from sessions_app.tables import user_directory  # noqa: E402

WARMUP = 10
GOAL_P95_MS = 100.0
TTL = 30 * 86_400
QUERIES = ("c", "cu", "cust-00", "cust-0123", "a", "3f", "a1b", "ana.", "anna.m", "zz", "e9c4d")
FIRST = ("ana", "anna", "jonas", "priya", "lukas", "sofia", "mateo", "emma", "noah", "yuki")
LAST = ("muller", "smith", "dubois", "jansen", "rossi", "garcia", "nguyen", "tanaka")


def _users(rng: random.Random, count: int):
    """(text, user key, kind) of every term of `count` users."""
    for n in range(count):
        anon = f"{rng.getrandbits(128):032x}"
        if rng.random() < 0.3:
            user = f"cust-{n:07d}"
            email = f"{rng.choice(FIRST)}.{rng.choice(LAST)}{n}@example.com"
            yield user, user, user_directory.USER_ID
            yield anon, user, user_directory.ANONYMOUS_ID
            yield email, user, user_directory.EMAIL
        else:
            yield anon, anon, user_directory.ANONYMOUS_ID


def seed(site_id, count: int) -> int:
    """Write the users' directory rows; return how many."""
    insert = prepare(user_directory.INSERT, idempotent=True, write=True)
    batch: list[tuple[Any, Any]] = []
    written = 0
    for text, key, kind in _users(random.Random(38), count):  # noqa: S311 - bench data
        rows = user_directory.rows_for(site_id, text=text, user_key=key, kind=kind, ttl=TTL)
        batch.extend((insert, row) for row in rows)
        if len(batch) >= 20_000:
            execute_concurrent(
                cassandra_session(), batch, concurrency=128, raise_on_first_error=True
            )
            written += len(batch)
            batch = []
    execute_concurrent(cassandra_session(), batch, concurrency=128, raise_on_first_error=True)
    return written + len(batch)


def main() -> None:
    users, runs = sizes(1_000_000, 60)
    site, _, _ = fresh_site("bench-directory", 1)
    began = time.monotonic()
    rows = seed(site.id, users)
    seeded_s = time.monotonic() - began
    settled_s = settle()
    search = prepare(user_directory.SEARCH)
    times: dict[str, list[float]] = {"app": [], "raw": []}
    per_query: dict[str, list[float]] = {q: [] for q in QUERIES}
    found = 0
    for round_ in range(WARMUP + runs):
        for q in QUERIES:  # one search, then the raw driver's same read, query by query
            began = time.perf_counter()
            matched = directory_match(site_id=site.id, query=q)
            app_ms = (time.perf_counter() - began) * 1000
            bounds = user_directory.search_bounds(q)
            assert bounds is not None
            began = time.perf_counter()
            list(cassandra_session().execute(search, (site.id, *bounds, PAGE * TERMS_A_USER)))
            raw_ms = (time.perf_counter() - began) * 1000
            if round_ >= WARMUP:
                times["app"].append(app_ms)
                times["raw"].append(raw_ms)
                per_query[q].append(app_ms)
                found += len(matched)
    print(json.dumps({
        "users": users,
        "rows": rows,
        "seeded_s": round(seeded_s, 1),
        "settled_s": round(settled_s, 1),
        "searches": len(times["app"]),
        "users_per_search": round(found / len(times["app"]), 1),
        "app_p50_ms": round(statistics.median(times["app"]), 2),
        "app_p95_ms": round(pct(times["app"], 0.95), 2),
        "raw_p50_ms": round(statistics.median(times["raw"]), 2),
        "raw_p95_ms": round(pct(times["raw"], 0.95), 2),
        "per_query_p95_ms": {q: round(pct(v, 0.95), 2) for q, v in per_query.items()},
        "goal_p95_ms": GOAL_P95_MS,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
