"""Session explorer benchmark (issue 25.5; run by bench/run.py in the bench environment,
or alone; prints JSON).

A fresh site gets SESSIONS sessions (default 100,000) spread over the 7 days before now,
written straight into site_sessions with the collector's own UPSERT: ~20 countries
(skewed), desktop/mobile/tablet/bot, 8 browsers, sources and media, campaigns, 1-6 of
50 paths a session, ~10% converted. Once the node has settled, the first page (50
sessions) of two filtered queries over those 7 days is timed in this process, the
query parsed from URL parameters as the API view does:

  (a) selective: country=NO, device=tablet, converted=true (about 1% x 8% x 10%:
      5 of 100,000 sessions; the page never fills, so every day and shard is read);
  (b) broad: device=desktop (about half: the newest day usually fills the page).

Match fractions come from the seeded data (`matches`, a brute force), not the table.

Beside each, the raw driver executes the same prepared statements with the same binds
in the same waves (`raw_explore`: rows fetched, nothing else done with them). Rounds
interleave the two, one call each, so a change in the VM's speed weighs on both alike;
the first WARMUP rounds are not counted. Goals (p95 server time): ≤ 100 ms for (a),
≤ 250 ms for (b). With a base URL (bench/run.py passes gunicorn's) the same first pages
are also asked of GET /api/sites/<id>/sessions: its Server-Timing (time in Django).

  DJANGO_SETTINGS_MODULE=clickstream.settings.local CASSANDRA_KEYSPACE=bench_explorer \\
      python -m bench.explorer [SESSIONS] [RUNS] [BASE_URL]
"""

from __future__ import annotations

import json
import os
import random
import re
import statistics
import sys
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.local")
django.setup()

from cassandra.cluster import ResponseFuture  # noqa: E402
from cassandra.concurrent import execute_concurrent_with_args  # noqa: E402
from cassandra.query import UNSET_VALUE as UNSET  # noqa: E402
from django.conf import settings  # noqa: E402

from bench.node import settle  # noqa: E402
from sessions_app.domain.ledger import policies  # noqa: E402
from sessions_app.features.analysis.dashboard import (  # noqa: E402
    dashboard_filtered,
    dashboard_filters,
    typed,
)
from sessions_app.features.analysis.explorer import (  # noqa: E402
    ExplorerQuery,
    cassandra_order,
    explorer_query_parse,
    sessions_explore,
)
from sessions_app.features.web.params import iso  # noqa: E402
from sessions_app.features.web.periods import period_param, site_zone  # noqa: E402
from sessions_app.foundation.core import timebuckets  # noqa: E402
from sessions_app.foundation.core.cql import cassandra_session, prepare  # noqa: E402
from sessions_app.foundation.core.garbage import tune_gc  # noqa: E402
from sessions_app.foundation.core.ids import time_uuid, time_uuid_bound  # noqa: E402
from sessions_app.foundation.models import Site  # noqa: E402
from sessions_app.foundation.tables import retention_specs, site_sessions  # noqa: E402
from sessions_app.foundation.tables.registry import statement_text  # noqa: E402
from sessions_app.foundation.tables.site_sessions import filtered_params  # noqa: E402

DAYS = 7
LIMIT = 50
WARMUP = 10
# The two filters, as URL parameters, and their goals: p95 server time, ms.
FILTERS: dict[str, dict[str, str]] = {
    "selective": {"country": "NO", "device": "tablet", "converted": "true"},
    "broad": {"device": "desktop"},
}
GOALS_MS = {"selective": 100.0, "broad": 250.0}
# The dashboard under two filters (issue 37.8): its whole filtered answer over the 7 days
# against the 7 before (KPIs, chart, breakdowns, entry pages), p95 goal in ms.
DASHBOARD_FILTERS = {"country": "DE", "device": "mobile"}
DASHBOARD_GOAL_MS = 500.0
# The filter names the seeded sessions answer to (the brute force's columns).
COLUMNS = {
    "country": "country",
    "device": "device",
    "browser": "browser",
    "source": "source",
    "medium": "medium",
    "campaign": "campaign",
    "converted": "converted",
}

COUNTRIES = {
    "US": 28, "DE": 12, "GB": 9, "FR": 7, "IN": 6, "BR": 5, "CA": 4.5, "NL": 4, "ES": 3.5,
    "IT": 3.5, "JP": 3, "AU": 2.5, "PL": 2.5, "SE": 2, "MX": 2, "CH": 1.5, "AT": 1.5,
    "BE": 1.5, "IE": 1, "NO": 1,
}  # fmt: skip
DEVICES = {"desktop": 50, "mobile": 38, "tablet": 8, "bot": 4}
OS = {
    "desktop": ("Windows", "macOS", "Linux"),
    "mobile": ("Android", "iOS"),
    "tablet": ("iPadOS", "Android"),
    "bot": (None,),
}
BROWSERS = {
    "Chrome": 46,
    "Safari": 20,
    "Edge": 10,
    "Firefox": 8,
    "Samsung Internet": 6,
    "Opera": 4,
    "Brave": 3,
    "Yandex Browser": 3,
}
ACQUISITION = {
    ("(direct)", "direct"): 30,
    ("Google", "search"): 32,
    ("Bing", "search"): 4,
    ("Facebook", "social"): 8,
    ("newsletter", "email"): 6,
    ("google", "cpc"): 10,
    ("news.ycombinator.com", "referral"): 5,
    ("(internal)", "internal"): 5,
}
CAMPAIGNS = ("spring-sale", "brand", "retargeting", "launch", "black-friday", "weekly-digest")
PATHS = [
    "/",
    "/pricing",
    "/cart",
    "/checkout",
    "/checkout/done",
    "/signup",
    "/login",
    "/docs",
    "/about",
    "/contact",
    *(f"/products/{n}" for n in range(20)),
    *(f"/blog/post-{n}" for n in range(20)),
]
PATH_WEIGHTS = [1 / (rank + 1) for rank in range(len(PATHS))]  # Zipf: "/" most viewed
EVENT_NAMES = ("signup", "add_to_cart", "video_play", "newsletter")
# The columns the collector's UPSERT sets, in its order (its SET clause, read from it).
UPSERT_COLUMNS = tuple(
    re.findall(
        r"(\w+) = ", re.split(r"\bSET\b|\bWHERE\b", statement_text("site_sessions.UPSERT"))[1]
    )
)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _pick(rng: random.Random, weights: Mapping[Any, float]) -> Any:
    return rng.choices(list(weights), weights=list(weights.values()))[0]


def _session(rng: random.Random, site_id: uuid.UUID, i: int, start: datetime) -> dict[str, Any]:
    """One session that started within DAYS days after start (what a summary holds)."""
    started = start + timedelta(seconds=rng.uniform(0, DAYS * 86_400 - 1))
    device = _pick(rng, DEVICES)
    pages = list(dict.fromkeys(rng.choices(PATHS, weights=PATH_WEIGHTS, k=rng.randint(1, 6))))
    converted = device != "bot" and rng.random() < 0.10
    views = len(pages) + rng.randrange(0, 3)
    events = set(rng.sample(EVENT_NAMES, rng.randrange(0, 3)))
    if converted:
        events.add("purchase")  # what converts (the sessions' goal)
    duration = 0 if views == 1 else int(rng.expovariate(1 / 180))
    source, medium = _pick(rng, ACQUISITION)
    identified = rng.random() < 0.2
    return {
        "session_id": time_uuid(started, f"{site_id}:{i}"),
        "user_key": f"user-{rng.randrange(5000)}" if identified else f"anon-{i}",
        "identified": identified,
        "started_at": started,
        "last_seen_at": started + timedelta(seconds=duration),
        "duration_s": duration,
        "event_count": views + len(events) + rng.randrange(0, 3 * views),
        "pageview_count": views,
        "converted": converted,
        "is_bot": device == "bot",
        "country": _pick(rng, COUNTRIES),
        "device": device,
        "browser": "Googlebot" if device == "bot" else _pick(rng, BROWSERS),
        "os": rng.choice(OS[device]),
        "source": source,
        "medium": medium,
        "campaign": rng.choice(CAMPAIGNS) if medium in ("cpc", "email") else None,
        "entry_path": pages[0],
        "exit_path": pages[-1],
        "pages": set(pages),
        "events": events,
    }


def matches(session: dict[str, Any], params: dict[str, str]) -> bool:
    """The brute force: does a seeded session satisfy every one of these URL filters?"""
    for name, value in params.items():
        stored = session[COLUMNS[name]]
        if (value == "true" if isinstance(stored, bool) else value) != stored:
            return False
    return True


def seed(site_id: uuid.UUID, sessions: int, now: datetime, *, rng_seed: int = 25) -> dict:
    """Write `sessions` sessions over the DAYS days before now into site_sessions.

    Returns how many there are and, per filter of FILTERS, how many match it and their
    fraction (from the seeded data, not the table under test).
    """
    rng = random.Random(rng_seed)  # noqa: S311 - test data
    upsert = prepare(statement_text("site_sessions.UPSERT"), idempotent=True, write=True)
    ttl = policies.ttl_seconds(retention_specs.SESSIONS)
    version = timebuckets.epoch_us(now)
    start = now - timedelta(days=DAYS)
    matched = dict.fromkeys(FILTERS, 0)
    for offset in range(0, sessions, 10_000):
        params = []
        for i in range(offset, min(sessions, offset + 10_000)):
            s = _session(rng, site_id, i, start)
            for name, filters in FILTERS.items():
                matched[name] += matches(s, filters)
            key = site_sessions.row_key(site_id, s["session_id"])
            termed = {d.name: s[d.column] for d in site_sessions.termed()}
            s["terms"] = site_sessions.terms_of(key[0], key[1], key[2], termed)
            values = [s[c] for c in UPSERT_COLUMNS]
            params.append((version, ttl, *(UNSET if v is None else v for v in values), *key))
        execute_concurrent_with_args(
            cassandra_session(), upsert, params, concurrency=64, raise_on_first_error=True
        )
    return {
        "sessions": sessions,
        "matched": matched,
        "fraction": {name: n / sessions for name, n in matched.items()},
    }


def raw_explore(site_id: uuid.UUID, query: ExplorerQuery, limit: int = LIMIT) -> tuple[list, int]:
    """The statements sessions_explore issues for a first page, through the driver alone.

    The same prepared statement (site_sessions.select_filtered), binds and waves (1, 2,
    4 ... days newest first, every shard of a wave at once, until `limit` rows were
    found); the rows are fetched and nothing else is done with them. (The app's budget
    of MAX_PARTITIONS partitions is far above a 7-day range's.) Returns the rows and
    the number of partitions read.
    """
    names = tuple(sorted(query.filters))
    statement = prepare(site_sessions.select_filtered(names))
    values = tuple(query.filters[n] for n in names)
    shards = max(1, settings.SESSION_SHARDS)
    db = cassandra_session()
    first = timebuckets.floor(query.start, timebuckets.Width.DAY)
    day = timebuckets.floor(query.end - timedelta(microseconds=1), timebuckets.Width.DAY)
    rows: list = []
    read, wave = 0, 1
    while day >= first and len(rows) < limit:
        futures: list[ResponseFuture] = []
        for _ in range(wave):
            if day < first:
                break
            low = time_uuid_bound(max(query.start, day))
            high = time_uuid_bound(min(query.end, day + timedelta(days=1)))
            futures.extend(
                db.execute_async(
                    statement,
                    filtered_params((site_id, day, shard), low, high, names, values, limit),
                )
                for shard in range(shards)
            )
            day -= timedelta(days=1)
        read += len(futures)
        for future in futures:
            rows.extend(future.result())
        wave *= 2
    return rows, read


def first_page(rows: list[dict[str, Any]], limit: int = LIMIT) -> list[uuid.UUID]:
    """The session ids a first page shows of these rows: the newest `limit`."""
    ids = sorted((r["session_id"] for r in rows), key=cassandra_order, reverse=True)
    return ids[:limit]


def _window(filters: dict[str, str], now: datetime) -> dict[str, str]:
    """A filter's URL parameters over the DAYS days before now, the seeded window (the
    pages' default period, 7 local days to midnight, would read one day less)."""
    return {**filters, "start": iso(now - timedelta(days=DAYS)), "end": iso(now)}


def measure(site_id: uuid.UUID, now: datetime, *, runs: int, warmup: int = WARMUP) -> dict:
    """p50/p95 of each filter's first page, app (parse + sessions_explore) and raw."""
    times: dict[tuple[str, str], list[float]] = {}
    last: dict[tuple[str, str], Any] = {}
    for _ in range(warmup + runs):
        for name, filters in FILTERS.items():
            params = _window(filters, now)
            query = explorer_query_parse(params, now=now)
            calls = {
                "app": lambda p=params: sessions_explore(
                    site_id=site_id, query=explorer_query_parse(p, now=now), limit=LIMIT
                ),
                "raw": lambda q=query: raw_explore(site_id, q),
            }
            for kind, call in calls.items():
                started = time.perf_counter()
                last[name, kind] = call()
                times.setdefault((name, kind), []).append((time.perf_counter() - started) * 1000)
    figures: dict[str, Any] = {}
    for name in FILTERS:
        app, raw = times[name, "app"][warmup:], times[name, "raw"][warmup:]
        page, (rows, raw_read) = last[name, "app"], last[name, "raw"]
        app_ids = [s["session_id"] for s in page.sessions]
        figures[name] = {
            "filters": FILTERS[name],
            "runs": runs,
            "page_sessions": len(page.sessions),
            "partitions_read": page.partitions_read,
            "raw_partitions_read": raw_read,
            "raw_rows": len(rows),
            "same_sessions": app_ids == first_page(rows),
            "app_p50_ms": statistics.median(app),
            "app_p95_ms": _pct(app, 0.95),
            "raw_p50_ms": statistics.median(raw),
            "raw_p95_ms": _pct(raw, 0.95),
            "goal_p95_ms": GOALS_MS[name],
            "goal_met": _pct(app, 0.95) <= GOALS_MS[name],
        }
    return figures


def raw_counted(site_id: uuid.UUID, period: Any, filters: dict[str, Any]) -> int:
    """The statements the dashboard's filtered answer issues (filtered.sessions_counting:
    every day and shard of the period, and of its comparison with the KPI columns only,
    all at once), through the driver alone; returns the rows fetched."""
    names = tuple(sorted(filters))
    values = tuple(filters[n] for n in names)
    shards = max(1, settings.SESSION_SHARDS)
    db = cassandra_session()
    futures: list[ResponseFuture] = []
    for window, kpis_only in ((period, False), (period.comparison(), True)):
        statement = prepare(site_sessions.select_filtered(names, kpis_only=kpis_only))
        start, end = window.start, window.elapsed_end
        day = timebuckets.floor(start, timebuckets.Width.DAY)
        while day < end:
            low = time_uuid_bound(max(start, day))
            high = time_uuid_bound(min(end, day + timedelta(days=1)))
            futures.extend(
                db.execute_async(
                    statement,
                    filtered_params((site_id, day, shard), low, high, names, values, 100_000),
                )
                for shard in range(shards)
            )
            day += timedelta(days=1)
    return sum(len(list(future.result())) for future in futures)


def measure_dashboard(site_id: uuid.UUID, now: datetime, *, runs: int) -> dict[str, Any]:
    """p50/p95 of the dashboard's filtered answer under two filters, app vs raw."""
    site = Site(id=site_id, name="bench")  # never saved: the rows path reads its id only
    params = {"start": iso(now - timedelta(days=DAYS)), "end": iso(now), "compare": "previous"}
    period = period_param(params, zone=site_zone("UTC"), now=now)
    filters = dashboard_filters(DASHBOARD_FILTERS)
    typed_filters = typed(filters)
    times: dict[str, list[float]] = {"app": [], "raw": []}
    answer, rows = None, 0
    for _ in range(WARMUP + runs):
        started = time.perf_counter()
        answer = dashboard_filtered(site=site, period=period, filters=filters)
        times["app"].append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        rows = raw_counted(site_id, period, typed_filters)
        times["raw"].append((time.perf_counter() - started) * 1000)
    app, raw = times["app"][WARMUP:], times["raw"][WARMUP:]
    assert answer is not None and not answer.counted.cut
    return {
        "filters": DASHBOARD_FILTERS,
        "runs": runs,
        "visits": answer.kpis.visits,
        "partitions_read": answer.counted.partitions_read
        + (answer.compared.partitions_read if answer.compared else 0),
        "raw_rows": rows,
        "app_p50_ms": statistics.median(app),
        "app_p95_ms": _pct(app, 0.95),
        "raw_p50_ms": statistics.median(raw),
        "raw_p95_ms": _pct(raw, 0.95),
        "goal_p95_ms": DASHBOARD_GOAL_MS,
    }


def api(base_url: str, site_id: uuid.UUID, now: datetime, runs: int) -> dict[str, Any]:
    """Server time (Server-Timing) of each filter's first page through the API."""
    from django.contrib.auth.models import User

    from sessions_app.domain.accounts import tokens

    user, _ = User.objects.get_or_create(username="bench-reader", defaults={"is_superuser": True})
    key = tokens.token_create(user=user, name="bench explorer", expires_days=1).key
    figures = {}
    for name, filters in FILTERS.items():
        query = explorer_query_parse(_window(filters, now), now=now).params()
        url = f"{base_url}/api/sites/{site_id}/sessions?" + urllib.parse.urlencode(
            {**query, "limit": LIMIT}
        )
        server = []
        for _ in range(runs + WARMUP):
            request = urllib.request.Request(url, headers={"Authorization": f"Token {key}"})  # noqa: S310 - loopback
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                response.read()
                server.append(float(response.headers["Server-Timing"].split("dur=")[1]))
        server = server[WARMUP:]
        figures[name] = {"p50_ms": statistics.median(server), "p95_ms": _pct(server, 0.95)}
    return figures


def main() -> None:
    sessions = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    base_url = sys.argv[3] if len(sys.argv) > 3 else None
    if base_url:  # the API needs the site in the database
        from sessions_app.domain.ledger import sites

        site_id = sites.site_create(name=f"explorer-{int(time.time())}", origins=[]).id
    else:
        site_id = uuid.uuid4()
    now = datetime.now(UTC).replace(microsecond=0)
    started = time.monotonic()
    seeded = seed(site_id, sessions, now)
    seeded["seed_s"] = time.monotonic() - started
    fractions = ", ".join(f"{n} {f:.3%}" for n, f in seeded["fraction"].items())
    print(
        f"seeded {sessions:,} sessions in {seeded['seed_s']:.0f}s; matching: {fractions}",
        file=sys.stderr,
    )
    seeded["settled_after_s"] = settle()
    tune_gc(settings.WEB_GC_THRESHOLD)  # as a web worker is, where the views run (wsgi.py)
    figures = measure(site_id, now, runs=runs)
    figures["dashboard_two"] = measure_dashboard(site_id, now, runs=max(10, runs // 3))
    if base_url:
        for name, timing in api(base_url, site_id, now, runs).items():
            figures[name]["api_server_p50_ms"] = timing["p50_ms"]
            figures[name]["api_server_p95_ms"] = timing["p95_ms"]
    for name in FILTERS:
        figures[name]["matched"] = seeded["matched"][name]
        figures[name]["fraction"] = seeded["fraction"][name]
    print(json.dumps({**seeded, **figures}))


if __name__ == "__main__":
    main()
