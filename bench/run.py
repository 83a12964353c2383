"""`make bench`: run the benchmarks on the local stack and print figures beside baselines.

Ingest: wrk (a separate, efficient load generator with bench/beacon.lua) POSTs beacons
to gunicorn; the baseline is the raw driver writing the same rows in the same run.
Every figure is printed with its baseline and the ratio, plus the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from contextlib import AbstractContextManager, ExitStack, nullcontext
from datetime import UTC, datetime
from typing import Any

from ops import cassandra, redis
from ops.common import ROOT, STATE, log
from ops.system import apt_install

BENCH_REDIS_PORT = 6382
# gunicorn's access-log line for bench/tail.py: the request's microseconds in the worker,
# then the answer's Server-Timing header (settings.COLLECT_SERVER_TIMING).
ACCESS_FORMAT = "%(D)s %({server-timing}o)s"
WEB_PORT = 8100
KEYSPACE = "bench_clickstream"
RESULTS = ROOT / "bench" / "results"


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "clickstream.settings.local",
        "DJANGO_DEBUG": "false",
        "CASSANDRA_KEYSPACE": KEYSPACE,
        "DATABASE_URL": f"sqlite:///{STATE / 'bench.sqlite3'}",
        "REDIS_URL": f"redis://127.0.0.1:{BENCH_REDIS_PORT}/0",
        "COLLECT_RATE_PER_SITE": "0",
        "COLLECT_RATE_PER_IP": "0",
        "TRUSTED_PROXY_COUNT": "1",  # the beacons' X-Forwarded-For: varied public addresses
        "LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }


def _manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def machine() -> str:
    cores = os.cpu_count()
    with open("/proc/meminfo") as meminfo:
        kib = int(meminfo.readline().split()[1])
    cpu = platform.processor() or platform.machine()
    return (
        f"{cores} cores, {kib / 1024 / 1024:.0f} GiB RAM, {cpu}, Python {platform.python_version()}"
    )


def _wrk(
    url: str,
    env: dict[str, str],
    *,
    events: int,
    seconds: int,
    connections: int,
    run: str,
    visitors: str,
    delay_ms: float = 0,
) -> dict[str, float]:
    wrk_env = {**env, "BENCH_EVENTS": str(events), "BENCH_RUN": run, "BENCH_VISITORS": visitors}
    if delay_ms:
        wrk_env["BENCH_DELAY_MS"] = f"{delay_ms:.0f}"
    result = subprocess.run(
        [
            "wrk",
            "-t",
            "2",
            "-c",
            str(connections),
            "-d",
            f"{seconds}s",
            "--timeout",
            "10s",
            "-s",
            str(ROOT / "bench" / "beacon.lua"),
            url,
        ],
        env=wrk_env,
        capture_output=True,
        text=True,
        check=True,
    )
    match = re.search(r"RESULT (.*)", result.stdout)
    if not match:
        raise RuntimeError(f"wrk printed no RESULT line:\n{result.stdout}\n{result.stderr}")
    fields = dict(item.split("=") for item in match.group(1).split())
    values = {k: float(v) for k, v in fields.items()}
    ok = values["requests"] - values["errors_status"]
    seconds_measured = values["duration_us"] / 1e6
    return {
        "events": ok * events,
        "seconds": seconds_measured,
        "events_per_second": ok * events / seconds_measured,
        "requests_per_second": ok / seconds_measured,
        "p50_ms": values["p50_us"] / 1000,
        "p99_ms": values["p99_us"] / 1000,
        "errors": values["errors_status"] + values["errors_connect"] + values["errors_timeout"],
    }


def _raw(site_id: str, *, events: int, seconds: int, processes: int) -> dict[str, float]:
    from bench import raw_ingest

    with ProcessPoolExecutor(processes) as pool:
        futures = [
            pool.submit(raw_ingest.run, KEYSPACE, site_id, events, seconds, seed)
            for seed in range(processes)
        ]
        results = [f.result() for f in futures]
    return raw_ingest.summarize(results, seconds, events)


def services(stack: ExitStack) -> None:
    """Start (and on exit stop) the Redis and Cassandra the benchmarks use, unless running."""
    if not shutil.which("wrk"):
        apt_install(["wrk"], why="the ingest benchmark's load generator")
    if redis.start(BENCH_REDIS_PORT):
        stack.callback(redis.stop, BENCH_REDIS_PORT)
    node = cassandra.node_from_env()
    if cassandra.start(node):
        stack.callback(cassandra.stop, node)


def _django(env: dict[str, str]) -> None:
    """This process's Django on the bench's settings, once: the modules whose constants it
    reads import the models (no connection is made: the driver connects lazily)."""
    from django.apps import apps

    if not apps.ready:
        for name in ("DJANGO_SETTINGS_MODULE", "CASSANDRA_KEYSPACE", "DATABASE_URL", "REDIS_URL"):
            os.environ.setdefault(name, env[name])
        import django

        django.setup()


def _queue(env: dict[str, str]) -> dict[str, int]:
    """The applier queue's length and how many plans the web workers wrote themselves."""
    import redis as redis_lib

    _django(env)
    from sessions_app.domain.ingest.coordination import INLINE_KEY, QUEUE_KEY

    client = redis_lib.Redis.from_url(env["REDIS_URL"])
    return {"queued": int(client.llen(QUEUE_KEY)), "inline": int(client.get(INLINE_KEY) or 0)}


def _drained(env: dict[str, str], timeout: float = 120) -> float:
    """Wait until the applier queue is empty; return the seconds waited."""
    started = time.monotonic()
    while _queue(env)["queued"] and time.monotonic() - started < timeout:
        time.sleep(0.05)
    return time.monotonic() - started


def _gunicorn(
    stack: ExitStack, env: dict[str, str], *, workers: int, threads: int
) -> subprocess.Popen[bytes]:
    """Start the web server serving /collect (BENCH_SERVER: gunicorn sync workers, the
    default; granian; or gevent, gunicorn's gevent workers with the driver on asyncore);
    it is stopped when the stack unwinds."""
    if env.get("BENCH_SERVER", "gunicorn") == "granian":
        argv = [
            *("-m", "granian", "--interface", "wsgi", "--host", "127.0.0.1"),
            *("--port", str(WEB_PORT), "--workers", str(workers)),
            *("--blocking-threads", str(threads), "--log-level", "warning"),
            "clickstream.wsgi:application",
        ]
    elif env.get("BENCH_SERVER") == "gevent":
        env = {**env, "CASSANDRA_REACTOR": "asyncore"}
        argv = [
            *("-m", "gunicorn", "clickstream.wsgi", "-b", f"127.0.0.1:{WEB_PORT}"),
            *("-w", str(workers), "-k", "gevent", "--worker-connections", "64"),
            *("--log-level", "warning"),
        ]
    else:
        argv = [
            *("-m", "gunicorn", "clickstream.wsgi", "-b", f"127.0.0.1:{WEB_PORT}"),
            *("-w", str(workers), "-k", "sync" if threads == 1 else "gthread"),
            *("--threads", str(threads), "--log-level", "warning"),
        ]
        if env.get("BENCH_ACCESS_LOG"):  # bench/tail.py: each request's time and steps
            argv += ["--access-logfile", env["BENCH_ACCESS_LOG"]]
            argv += ["--access-logformat", ACCESS_FORMAT]
    server = subprocess.Popen([sys.executable, *argv], cwd=ROOT, env=env, start_new_session=True)
    stack.callback(lambda: _stop(server))
    return server


def _ready(env: dict[str, str]) -> None:
    # Ready when the collector answers a CORS preflight (204). Not /healthz: without a
    # Celery worker it answers 503, which Django logs at ERROR in every run.
    probe = urllib.request.Request(
        f"http://127.0.0.1:{WEB_PORT}/collect?site={env['BENCH_SITE']}",
        method="OPTIONS",
        headers={"Origin": "http://127.0.0.1:8000"},
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(probe, timeout=5)  # noqa: S310 - loopback
            break
        except urllib.error.HTTPError:
            break  # answering
        except OSError:
            time.sleep(0.5)


def collector(
    stack: ExitStack,
    *,
    workers: int,
    threads: int,
    appliers: int = 1,
    extra_env: dict[str, str] | None = None,
) -> tuple[dict[str, str], str, subprocess.Popen[bytes]]:
    """A fresh bench keyspace and site, and gunicorn serving /collect; (env, url, process)."""
    env = {**_env(), **(extra_env or {})}
    _manage(env, "migrate", "--noinput", "-v", "0")
    # DEBUG is off, as in production: WhiteNoise serves STATIC_ROOT only (and warns
    # "No directory at" in every worker while nothing was collected there).
    _manage(env, "collectstatic", "--noinput", "-v", "0")
    # A fresh keyspace each run: every figure starts from the same compaction state.
    _manage(
        env,
        "shell",
        "-c",
        "from sessions_app.foundation.core.cql import cassandra_session; "
        f"cassandra_session().execute('DROP KEYSPACE IF EXISTS {KEYSPACE}', timeout=120)",
    )
    _manage(env, "sync_cassandra")
    _manage(env, "cassandra_indexes")
    out = _manage(
        env, "create_site", f"bench-{int(time.time())}", "--origin", "http://127.0.0.1:8000"
    )
    env["BENCH_SITE"] = out.strip().splitlines()[-1]
    env["BENCH_SITE_ID"] = re.search(r"\(([0-9a-f-]{36})\)", out).group(1)  # type: ignore[union-attr]
    _goals_add(env)
    gunicorn = _gunicorn(stack, env, workers=workers, threads=threads)
    for _ in range(appliers):
        applier = subprocess.Popen(
            [sys.executable, "manage.py", "run_applier"],
            cwd=ROOT,
            env=env,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
        )
        stack.callback(_process_stop, applier)
    _ready(env)
    return env, f"http://127.0.0.1:{WEB_PORT}/collect", gunicorn


def _http_figure(
    url: str, env: dict[str, str], *, events: int, seconds: int, tag: str
) -> dict[str, float]:
    """One /collect throughput figure: warm new visitors (their sessions cached, so the
    measured run is the steady state of active visitors mid-session), then measure; the
    time the applier needs to empty its queue afterwards is part of the run."""
    visitors = f"{tag}{events}-{int(time.time())}"
    _wrk(
        url,
        env,
        events=events,
        seconds=5,
        connections=16,
        run=f"warm-{visitors}",
        visitors=visitors,
    )
    _drained(env)
    before = _queue(env)
    http = _wrk(
        url,
        env,
        events=events,
        seconds=seconds,
        connections=16,
        run=f"m-{visitors}",
        visitors=visitors,
    )
    http["queued_at_end"] = _queue(env)["queued"]
    http["drain_s"] = _drained(env)
    http["inline_plans"] = _queue(env)["inline"] - before["inline"]
    http["events_per_second"] = http["events"] / (http["seconds"] + http["drain_s"])
    return http


BEACONS = (30, 5, 1)  # events per request: a tracker's flush, a few clicks, one event
# The paced run's target: this share of the measured peak request rate (issue 59 states
# its latency goals at 70 % of the peak).
PACED_SHARE = 0.7
# The paced p99 goals by beacon size (events per request), in ms.
PACED_GOAL_P99_MS = {30: 150.0, 5: 100.0, 1: 100.0}


def _paced_figure(
    url: str,
    env: dict[str, str],
    *,
    events: int,
    seconds: int,
    peak_rps: float,
    freshness: bool = True,
    observer: Callable[[], AbstractContextManager[Any]] = nullcontext,
) -> dict[str, Any]:
    """Latency below saturation: wrk with a pause after each answer (beacon.lua's delay())
    so the 16 connections together send about PACED_SHARE of the peak request rate. A
    short pass measures the latency at that load, the pause is shortened by it, then the
    measured pass; the rate it reached is reported beside its p50 / p99. Beside the
    measured pass, the accepted → visible prober (bench/freshness.py) times how soon a
    new event can be read; `observer` wraps the measured pass (bench/tail.py's marks)."""
    visitors = f"paced{events}-{int(time.time())}"
    target = PACED_SHARE * peak_rps
    pause = 16 * 1000 / target
    probe = _wrk(
        url,
        env,
        events=events,
        seconds=5,
        connections=16,
        run=f"pw-{visitors}",
        visitors=visitors,
        delay_ms=pause,
    )
    pause = max(1.0, pause - probe["p50_ms"])
    _drained(env)
    prober = _prober(url, env, run=visitors) if freshness else None
    try:
        with observer():
            paced = _wrk(
                url,
                env,
                events=events,
                seconds=seconds,
                connections=16,
                run=f"pm-{visitors}",
                visitors=visitors,
                delay_ms=pause,
            )
    finally:
        if prober:
            prober.stop.set()
            prober.join(60)
    _drained(env)
    paced["share_of_peak"] = paced["requests_per_second"] / peak_rps
    if prober:
        paced["freshness"] = prober.figures()
    return paced


def _prober(url: str, env: dict[str, str], *, run: str) -> Any:
    """The accepted → visible prober (bench/freshness.py), started, on a site of its own."""
    _django(env)
    from bench import freshness

    prober = freshness.Prober(url, freshness.prober_site(), run)
    prober.start()
    return prober


# The bench site's goals: ingest matches every event against them (sessionize's
# `converts`), as on a site that has goals; beacon.lua's page views reach the first two.
GOALS = {
    "Viewed item 3": {"kind": "pageview", "path": "/products/item-3"},
    "Any product": {"kind": "pageview", "path": "/products/", "match": "prefix"},
    "Added to cart": {"kind": "click", "selector": "button#buy-3"},
    "Purchase": {"kind": "event", "name": "purchase"},
}


def _goals_add(env: dict[str, str]) -> None:
    """Give the bench site its GOALS (through the app, as a site admin would)."""
    _django(env)
    from sessions_app.domain.jobs.goal_backfill import goal_save
    from sessions_app.foundation.models import Site

    site = Site.objects.get(pk=env["BENCH_SITE_ID"])
    for name, definition in GOALS.items():
        goal_save(site=site, name=name, definition=definition, now=datetime.now(UTC))


def _process_stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM a process group (an applier), then wait for it."""
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(60)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop gunicorn (its process group) if it still runs; safe to call twice."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(20)


def ingest(
    stack: ExitStack,
    *,
    seconds: int,
    workers: int,
    threads: int,
    warmup: int,
    seal_events: int,
    full: bool = True,
    appliers: int = 1,
    enrichment_baseline: bool = True,
    scale_out: bool = False,
    directory_users: int = 100_000,
) -> tuple[list[dict], dict]:
    env, url, gunicorn = collector(stack, workers=workers, threads=threads, appliers=appliers)
    site_id = env["BENCH_SITE_ID"]
    # Warm the JVM first: Cassandra's JIT compiler takes most of a core for a minute
    # or two after a start, which would tax whichever figure runs first.
    log(f"warming up Cassandra's JIT and the workers for {warmup}s ...")
    _wrk(
        url,
        env,
        events=30,
        seconds=warmup * 2 // 3,
        connections=16,
        run=f"jit-{time.time()}",
        visitors="jit",
    )
    _raw(site_id, events=30, seconds=warmup // 3, processes=workers)
    rows = []
    for events in BEACONS:
        row: dict = {"beacon": events}
        if enrichment_baseline:
            # The same beacons with enrichment off, just before the figure with it on:
            # adjacent in time and keyspace state, so the VM's drift and the fuller
            # keyspace weigh on the pair alike (measured first, the off figure has the
            # emptier keyspace: the comparison leans against enrichment, not for it).
            _stop(gunicorn)
            gunicorn = _gunicorn(
                stack, {**env, "INGEST_ENRICHMENT": "false"}, workers=workers, threads=threads
            )
            _ready(env)
            plain = _http_figure(url, env, events=events, seconds=seconds, tag="plain")
            row["http_without_enrichment"] = plain
            log(
                f"ingest {events}-event beacons, enrichment off: "
                f"HTTP {plain['events_per_second']:.0f}/s"
            )
            _stop(gunicorn)
            gunicorn = _gunicorn(stack, env, workers=workers, threads=threads)
            _ready(env)
        http = _http_figure(url, env, events=events, seconds=seconds, tag="v")
        raw = _raw(site_id, events=events, seconds=seconds, processes=workers)
        row.update(http=http, raw=raw)
        rows.append(row)
        log(
            f"ingest {events}-event beacons: HTTP {http['events_per_second']:.0f}/s, "
            f"raw {raw['events_per_second']:.0f}/s"
        )
    for row in rows:
        row["paced"] = _paced_figure(
            url,
            env,
            events=row["beacon"],
            seconds=seconds,
            peak_rps=row["http"]["requests_per_second"],
        )
        paced = row["paced"]
        log(
            f"ingest {row['beacon']}-event beacons, paced: {paced['share_of_peak']:.0%} "
            f"of peak, p99 {paced['p99_ms']:.0f} ms"
        )
    if scale_out:
        scaled = {}
        for count in (1, 2):
            _stop(gunicorn)
            gunicorn = _gunicorn(stack, env, workers=count, threads=threads)
            _ready(env)
            scaled[count] = _http_figure(url, env, events=5, seconds=seconds, tag=f"w{count}")
            log(
                f"ingest 5-event beacons, {count} web worker(s): "
                f"{scaled[count]['events_per_second']:.0f}/s"
            )
        scaled[workers] = next(r["http"] for r in rows if r["beacon"] == 5)
        rows[0]["scale_out"] = {str(k): v for k, v in sorted(scaled.items())}
        _stop(gunicorn)
        gunicorn = _gunicorn(stack, env, workers=workers, threads=threads)
        _ready(env)
    if not full:
        return rows, {}
    log("read benchmarks ...")
    reads = _step(env, "bench.reads", f"http://127.0.0.1:{WEB_PORT}", "200")
    log(f"seal and rolling-counter benchmarks ({seal_events:,} events in one hour) ...")
    reads.update(_step(env, "bench.sealing", str(seal_events), "30"))
    log("session explorer benchmarks (100,000 sessions over 7 days) ...")
    reads["explorer"] = _step(env, "bench.explorer", "100000", "60", f"http://127.0.0.1:{WEB_PORT}")
    log("paths and transitions benchmarks (30 sealed days, ~1,000,000 page views) ...")
    reads["paths"] = _step(env, "bench.paths", "7000", "60")
    log("heatmap benchmark (30 sealed days, 20,000 clicks a day on the page) ...")
    reads["heatmaps"] = _step(env, "bench.heatmaps", "20000", "60")
    log("web vitals benchmark (30 days, over 1,000,000 page views) ...")
    reads["vitals"] = _step(env, "bench.vitals", "36000", "60")
    log("funnel benchmarks (30 sealed days, ~1,000,000 events) ...")
    reads["funnels"] = _step(env, "bench.funnels", "33400", "20")
    log(f"users directory benchmark ({directory_users:,} users) ...")
    reads["directory"] = _step(env, "bench.directory", str(directory_users), "20")
    log("dashboard benchmarks (13 sealed months, ~1,000,000 events) ...")
    reads["dashboard"] = _step(env, "bench.dashboard", "40", "30")
    log("goal table benchmark (5 goals, 61 sealed days) ...")
    reads["goals"] = _step(env, "bench.goals", "2000", "30")
    log("retention cohorts benchmark (12 weekly cohorts x 12 weeks, 1,000,000 users) ...")
    reads["cohorts"] = _step(env, "bench.cohorts", "1000000", "20")
    log("replay storage benchmark (a recorded demo-shop minute, 100 visitors x 3 rounds) ...")
    reads["replay"] = _step(env, "bench.replay", "100", "3")
    log("replay player benchmark (first frame of a 10-minute recording, Chromium) ...")
    reads["replay_player"] = _step(env, "bench.replay_player", f"http://127.0.0.1:{WEB_PORT}")
    return rows, reads


def _replay_lines(r: dict) -> list[str]:
    """Replay ingest (compressed MB/s vs the raw driver) and bytes stored per minute."""
    if not r:
        return []
    met = r["ratio_median"] >= r["goal_ratio"]
    return [
        f"| replay ingest ({r['chunks_per_round']:,} chunks, {r['mb_per_round']} MB a round, "
        f"{r['threads']} threads): compressed MB/s stored through the collector's code vs the "
        f"raw driver writing the same blobs, median of {r['runs']} (goal ≥ {r['goal_ratio']}: "
        f"{'met' if met else 'missed'}) | {statistics.median(r['app_mb_s']):.2f} | "
        f"{statistics.median(r['raw_mb_s']):.2f} | {r['ratio_median']:.2f} |",
        f"| replay bytes stored per minute of a demo-shop session ({r['recording_minutes']} min, "
        f"{r['chunks']} chunks): with the shared stylesheets ({r['assets']} stored once for the "
        f"site, {r['asset_bytes']:,} B) vs as the recorder sent them "
        f"| {r['stored_bytes_per_min']:,} | {r['sent_bytes_per_min']:,} | — |",
    ]


def _dashboard_lines(d: dict) -> list[str]:
    """The dashboard rows: 30 days, 12 months, a sealed filter, beside the raw driver."""
    lines: list[str] = []
    rows = (
        ("days30", "30 days by day", "raw30"),
        ("months12", "12 months by month", "raw12"),
        ("filter30", "30 days, filter source=Google", "raw30"),
    )
    for name, what, raw in rows if d else ():
        met = d[f"{name}_p95_ms"] <= d["goals_ms"][name]
        lines.append(
            f"| dashboard, {what}, against the period before, over {d['events']:,} sealed "
            f"events: p50 / p95 ms in-process vs the raw driver reading the same stored rows, "
            f"median of 3 (goal p95 ≤ {d['goals_ms'][name]:.0f} ms: "
            f"{'met' if met else 'missed'}) | {d[f'{name}_p50_ms']:.1f} / "
            f"{d[f'{name}_p95_ms']:.1f} | {d[f'{raw}_p50_ms']:.1f} / {d[f'{raw}_p95_ms']:.1f} "
            f"| {d[f'{raw}_p95_ms'] / d[f'{name}_p95_ms']:.2f} |"
        )
    for way, what in (("segment", "a saved segment applied"), ("share", "a locked share link")):
        if f"page_{way}_ratio" not in d:
            continue
        ratio = d[f"page_{way}_ratio"]
        met = ratio <= d["goal_page_ratio"]
        lines.append(
            f"| dashboard page, 30 days, source=Google, through {what} vs the filters in the "
            f"URL (Django test client, whole page): p50 ms, the ratio the median of three "
            f"rounds' (goal ≤ {d['goal_page_ratio']}: {'met' if met else 'missed'}) "
            f"| {d[f'page_{way}_p50_ms']:.1f} | {d['page_filters_p50_ms']:.1f} | {ratio:.2f} |"
        )
    return lines


def _replay_player_lines(r: dict) -> list[str]:
    """The replay player's first frame (bench/replay_player.py) beside the raw read."""
    if not r:
        return []
    return [
        f"| replay player: first frame of a {r['seconds'] / 60:.0f}-minute recorded session "
        f"({r['chunks']} chunks, {r['bytes']:,} B through /replay) on the timeline page, "
        f"headless Chromium, cold cache: ms from navigation start, median of {r['runs']} "
        f"runs of {r['loads_per_run']} loads (the API's first answer at {r['api_ms']:.0f} "
        f"ms) vs the raw driver reading the first {r['first_page_chunks']} chunks (goal "
        f"≤ {r['goal_ms']:.0f} ms: {'met' if r['met'] else 'missed'}) | {r['frame_ms']:.0f} "
        f"| {r['raw_first_p50_ms']:.1f} | {r['raw_first_p50_ms'] / r['frame_ms']:.3f} |"
    ]


def _goal_lines(d: dict) -> list[str]:
    """The goal table rows: 30 days against the 30 before, unfiltered and by one source."""
    lines: list[str] = []
    for name, what in (("goals30", "30 days"), ("goals30_filter", "30 days, source=Google")):
        if not d:
            break
        met = d[f"{name}_p95_ms"] <= d["goal_ms"]
        lines.append(
            f"| goal table, {what}, against the period before, {d['goals']} goals over "
            f"{d['buckets']:,} sealed buckets: p50 / p95 ms in-process vs the raw driver reading "
            f"the same stored rows, median of 3 (goal p95 ≤ {d['goal_ms']:.0f} ms: "
            f"{'met' if met else 'missed'}) | {d[f'{name}_p50_ms']:.1f} / "
            f"{d[f'{name}_p95_ms']:.1f} | {d['raw30_p50_ms']:.1f} / {d['raw30_p95_ms']:.1f} "
            f"| {d['raw30_p95_ms'] / d[f'{name}_p95_ms']:.2f} |"
        )
    if d:
        lines.append(
            f"| seal of one hour of {d['seal_events']:,} events from its tallies, without goals "
            f"vs with {d['goals']} goals defined before the events (ingest matched them): "
            f"seconds, median of 3 | {d['seal_goals_s']:.2f} | {d['seal_s']:.2f} "
            f"| {d['seal_s'] / d['seal_goals_s']:.2f} |"
        )
        lines.append(
            f"| the same with the goals defined after the events (their product scans the "
            f"hour's raw rows) | {d['seal_goals_after_s']:.2f} | {d['seal_s']:.2f} "
            f"| {d['seal_s'] / d['seal_goals_after_s']:.2f} |"
        )
    return lines


def _step(env: dict[str, str], module: str, *args: str) -> dict:
    """Run one benchmark module; return the JSON of its last line, or fail with its stderr.

    Its data set-up writes each batch before going on (APPLY_QUEUE off): what it then
    measures reads those rows at once.
    """
    result = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env={**env, "APPLY_QUEUE": "false"},
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{module} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _timeline_lines(reads: dict) -> list[str]:
    """bench.reads: the session timeline and the activity strategies."""
    lines: list[str] = []
    settled = f"node settled ({reads['settled_after_s']:.0f}s wait)"
    for key, when in (
        ("timeline_busy", "open session (its rows: all just written), right after the ingest runs"),
        ("timeline", f"open session (materialized prefix + rows after it), {settled}"),
        ("timeline_materialized", f"closed session (materialized copy), {settled}"),
    ):
        t = reads[key]
        answered = ", ".join(f"{n} {source}" for source, n in t.get("sources", {}).items())
        lines.append(
            f"| session timeline ({t['events']} events), {when}"
            + (f" [answered: {answered}]" if answered else "")
            + ": API server time p50 / p95 ms "
            f"vs raw driver reading the partition | {t['api_server_p50_ms']:.1f} / "
            f"{t['api_server_p95_ms']:.1f} | {t['raw_p50_ms']:.1f} / {t['raw_p95_ms']:.1f} "
            f"| {t['raw_p95_ms'] / t['api_server_p95_ms']:.2f} |"
        )
        lines.append(
            f"| session timeline, {when}: API client time p50 / p95 ms (loopback HTTP) "
            f"| {t['api_client_p50_ms']:.1f} / {t['api_client_p95_ms']:.1f} | — | — |"
        )
    b = reads["buckets"]
    lines.append(
        "| activity over 30 daily buckets: CPU ms per call, app + Cassandra "
        + ", ".join(
            f"{name} {b[name]['app_cpu_ms']:.0f} + {b[name]['cassandra_cpu_ms']:.0f}"
            for name in ("parallel", "in")
        )
        + f" vs sequential | — | {b['sequential']['app_cpu_ms']:.0f} + "
        f"{b['sequential']['cassandra_cpu_ms']:.0f} | — |"
    )
    for strategy in ("parallel", "in"):
        lines.append(
            f"| activity over 30 daily buckets ({b[strategy]['events']} events): {strategy} "
            f"({b[strategy].get('queries', '?')} vs {b['sequential'].get('queries', '?')} "
            f"queries) p50 ms vs sequential | {b[strategy]['p50_ms']:.1f} | "
            f"{b['sequential']['p50_ms']:.1f} | "
            f"{b['sequential']['p50_ms'] / b[strategy]['p50_ms']:.2f}x faster |"
        )
    if "raw_parallel" in b:
        raw_par, raw_seq = b["raw_parallel"], b["raw_sequential"]
        lines.append(
            f"| activity over 30 daily buckets, the raw driver alone (the same statements, rows "
            f"not finished): parallel ({raw_par['queries']} vs {raw_seq['queries']} queries) "
            "p50 ms vs sequential (what the selector adds to both only lowers the ratio) "
            f"| {raw_par['p50_ms']:.1f} | "
            f"{raw_seq['p50_ms']:.1f} | {raw_seq['p50_ms'] / raw_par['p50_ms']:.2f}x faster |"
        )
    return lines


def _seal_lines(reads: dict) -> list[str]:
    """bench.sealing: the seal against the raw read, the rolling count's cover."""
    lines: list[str] = []
    seal, rolling = reads["seal"], reads["rolling"]
    lines.append(
        f"| seal one hour of {seal['events']:,} events ({seal['per_user_rows']:,} per-user "
        f"counts) from its beacons' tallies, node settled before each figure: events/s, "
        f"vs the raw driver only reading the hour's raw rows "
        f"| {seal['seal_events_per_second']:,.0f} | {seal['scan_events_per_second']:,.0f} "
        f"| {seal['seal_events_per_second'] / seal['scan_events_per_second']:.2f} |"
    )
    lines.append(
        f"| the same seal from the raw rows (hours an erasure edited): events/s, vs the "
        f"raw read | {seal['seal_raw_events_per_second']:,.0f} "
        f"| {seal['scan_events_per_second']:,.0f} "
        f"| {seal['seal_raw_events_per_second'] / seal['scan_events_per_second']:.2f} |"
    )
    lines.append(
        f"| 12-month rolling count ({rolling['count']} events): p50 ms, sealed months/days/hours "
        f"cover vs hours only | {rolling['cover_p50_ms']:.1f} | {rolling['naive_p50_ms']:.1f} "
        f"| {rolling['naive_p50_ms'] / rolling['cover_p50_ms']:.1f}x faster |"
    )
    lines.append(
        f"| 12-month rolling count: partitions / rows read "
        f"| {rolling['cover_partitions']} / {rolling['cover_rows']} "
        f"| {rolling['naive_partitions']} / {rolling['naive_rows']} | — |"
    )
    return lines


def render(rows: list[dict], reads: dict, *, workers: int, threads: int, seconds: int) -> str:
    lines = [
        f"clickstream benchmarks, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC — {machine()}",
        f"ingest: gunicorn {workers} "
        + ("sync workers" if threads == 1 else f"workers x {threads} threads")
        + ", wrk 2 threads / 16 connections, "
        f"{seconds}s per figure; Cassandra, Redis, gunicorn and wrk on the same machine",
        "",
        "| figure | clickstream | baseline | ratio |",
        "|---|---|---|---|",
    ]
    for row in rows:
        http, raw, n = row["http"], row["raw"], row["beacon"]
        ratio = http["events_per_second"] / raw["events_per_second"]
        lines.append(
            f"| ingest, {n}-event beacons: clicks/s (HTTP /collect vs raw driver, same rows) "
            f"| {http['events_per_second']:,.0f} | {raw['events_per_second']:,.0f} "
            f"| {ratio:.2f} |"
        )
        lines.append(
            f"| ingest, {n}-event beacons: request latency p50 / p99 ms "
            f"(raw: per wave of 8 batches) | {http['p50_ms']:.1f} / {http['p99_ms']:.1f} "
            f"| {raw['p50_ms']:.1f} / {raw['p99_ms']:.1f} | — |"
        )
        plain = row.get("http_without_enrichment")
        if plain:
            lines.append(
                f"| ingest, {n}-event beacons: clicks/s with session enrichment vs without "
                f"(INGEST_ENRICHMENT=false, same beacons, measured just before) "
                f"| {http['events_per_second']:,.0f} | {plain['events_per_second']:,.0f} "
                f"| {http['events_per_second'] / plain['events_per_second']:.2f} |"
            )
        paced = row.get("paced")
        if paced:
            goal = PACED_GOAL_P99_MS[n]
            lines.append(
                f"| ingest, {n}-event beacons, paced at {paced['share_of_peak']:.0%} of the "
                f"peak request rate ({paced['requests_per_second']:,.0f} requests/s): "
                f"latency p50 / p99 ms (goal p99 ≤ {goal:.0f}: "
                f"{'met' if paced['p99_ms'] <= goal else 'missed'}) | {paced['p50_ms']:.1f} / "
                f"{paced['p99_ms']:.1f} | — | — |"
            )
        fresh = (paced or {}).get("freshness")
        if fresh:
            lines.append(
                f"| accepted → visible under the paced {n}-event load ({fresh['probes']} "
                "one-event probes, a site of their own): ms after the 200 until the session "
                "list and timeline show it, p50 / p99; realtime, p50 / p99 (goal p99 ≤ "
                f"{fresh['goal_p99_ms']:.0f}: {'met' if fresh['met'] else 'missed'}) "
                f"| {fresh['timeline_p50_ms']:.0f} / {fresh['timeline_p99_ms']:.0f}; "
                f"{fresh['realtime_p50_ms']:.0f} / {fresh['realtime_p99_ms']:.0f} | — | — |"
            )
        if http["errors"] or raw.get("failed_batches"):
            lines.append(
                f"| ingest, {n}-event beacons: failed requests (raw: failed batches, "
                f"not counted as written) | {http['errors']:.0f} "
                f"| {raw.get('failed_batches', 0):.0f} | — |"
            )
    scaled = rows[0].get("scale_out") if rows else None
    for count, figure in (scaled or {}).items():
        lines.append(
            f"| ingest, 5-event beacons, {count} web worker(s) + 1 applier: clicks/s "
            f"| {figure['events_per_second']:,.0f} | — | — |"
        )
    lines.extend(_timeline_lines(reads) if "timeline" in reads else [])
    lines.extend(_seal_lines(reads) if "seal" in reads else [])
    x: dict = reads.get("explorer") or {}
    for name in ("selective", "broad") if x else ():
        f, met = x[name], x[name]["app_p95_ms"] <= x[name]["goal_p95_ms"]
        where = ", ".join(f"{k}={v}" for k, v in f["filters"].items())
        lines.append(
            f"| session explorer, {x['sessions']:,} sessions over 7 days, first page of 50, "
            f"{name} filter ({where}: {f['fraction']:.3%} match, {f['partitions_read']} "
            f"partitions read): p50 / p95 ms in-process vs raw driver, same statements (goal "
            f"p95 ≤ {f['goal_p95_ms']:.0f} ms: {'met' if met else 'missed'}) | "
            f"{f['app_p50_ms']:.1f} / {f['app_p95_ms']:.1f} | {f['raw_p50_ms']:.1f} / "
            f"{f['raw_p95_ms']:.1f} | {f['raw_p95_ms'] / f['app_p95_ms']:.2f} |"
        )
        if "api_server_p95_ms" in f:
            lines.append(
                f"| session explorer, {name} filter: GET /api/sites/<id>/sessions server time "
                f"(Server-Timing) p50 / p95 ms "
                f"| {f['api_server_p50_ms']:.1f} / {f['api_server_p95_ms']:.1f} | — | — |"
            )
    two: dict = x.get("dashboard_two") or {}
    if two:
        where = ", ".join(f"{k}={v}" for k, v in two["filters"].items())
        met = two["app_p95_ms"] <= two["goal_p95_ms"]
        lines.append(
            f"| dashboard filtered by two dimensions ({where}: {two['visits']:,} visits), "
            f"{x['sessions']:,} sessions over 7 days against the 7 before, "
            f"{two['partitions_read']} partitions: p50 / p95 ms in-process vs raw driver, same "
            f"statements (goal p95 ≤ {two['goal_p95_ms']:.0f} ms: {'met' if met else 'missed'}) "
            f"| {two['app_p50_ms']:.1f} / {two['app_p95_ms']:.1f} | {two['raw_p50_ms']:.1f} / "
            f"{two['raw_p95_ms']:.1f} | {two['raw_p95_ms'] / two['app_p95_ms']:.2f} |"
        )
    lines.extend(_dashboard_lines(reads.get("dashboard") or {}))
    lines.extend(_replay_lines(reads.get("replay") or {}))
    lines.extend(_goal_lines(reads.get("goals") or {}))
    u: dict = reads.get("directory") or {}
    if u:
        met = u["app_p95_ms"] <= u["goal_p95_ms"]
        lines.append(
            f"| users directory over {u['users']:,} users ({u['rows']:,} rows): recent list "
            f"and prefix search by user id, anonymous id, email, a page of 50 users described: "
            f"p50 / p95 ms in-process vs the raw driver, same statements (goal "
            f"p95 ≤ {u['goal_p95_ms']:.0f} ms: {'met' if met else 'missed'}) | "
            f"{u['app_p50_ms']:.1f} / {u['app_p95_ms']:.1f} | {u['raw_p50_ms']:.1f} / "
            f"{u['raw_p95_ms']:.1f} | {u['raw_p95_ms'] / u['app_p95_ms']:.2f} |"
        )
    p: dict = reads.get("paths") or {}
    for name, what in (
        (
            ("paths", "top paths from the session start (Sankey + whole paths)"),
            ("transitions", "transitions of one page"),
        )
        if p
        else ()
    ):
        met = p[f"{name}_p95_ms"] <= p["goal_p95_ms"]
        lines.append(
            f"| {what} over 30 sealed days ({p['page_views']:,} page views): p50 / p95 ms "
            f"in-process vs the raw driver reading the same 30 rows (goal p95 ≤ "
            f"{p['goal_p95_ms']:.0f} ms: {'met' if met else 'missed'}) | {p[f'{name}_p50_ms']:.1f} "
            f"/ {p[f'{name}_p95_ms']:.1f} | {p['raw_p50_ms']:.1f} / {p['raw_p95_ms']:.1f} | "
            f"{p['raw_p95_ms'] / p[f'{name}_p95_ms']:.2f} |"
        )
    h: dict = reads.get("heatmaps") or {}
    if h:
        met = h["app_p95_ms"] <= h["goal_p95_ms"]
        lines.append(
            f"| a page's heatmap over 30 sealed days ({h['page_clicks']:,} clicks in one layout): "
            f"the overlay's answer, p50 / p95 ms in-process vs the raw driver reading the same "
            f"{h['raw_rows']} rows (goal p95 ≤ {h['goal_p95_ms']:.0f} ms: "
            f"{'met' if met else 'missed'}) | {h['app_p50_ms']:.1f} / {h['app_p95_ms']:.1f} | "
            f"{h['raw_p50_ms']:.1f} / {h['raw_p95_ms']:.1f} | "
            f"{h['raw_p95_ms'] / h['app_p95_ms']:.2f} |"
        )
    c: dict = reads.get("cohorts") or {}
    if c:
        lines.append(
            f"| 12 weekly cohorts x 12 weeks ({c['users']:,} users, {c['raw_rows']:,} raw rows): "
            f"cold (sets from raw rows) rows/s vs the raw driver's scan, goal ≥ {c['cold_goal']}; "
            f"warm (sealed sets, answer cached) p50 / p95 {c['warm_p50_ms']} / {c['warm_p95_ms']} "
            f"ms, goal p95 ≤ {c['goal_p95_ms']:.0f} (sets read, cache cleared: "
            f"{c['warm_uncached_p50_ms']} / {c['warm_uncached_p95_ms']} ms) "
            f"| {c['cold_rows_per_s']:,} | {c['raw_rows_per_s']:,} "
            f"| {c['cold_ratio']:.2f} |"
        )
    v: dict = reads.get("vitals") or {}
    if v:
        met = v["app_p95_ms"] <= v["goal_p95_ms"]
        lines.append(
            f"| web vitals over 30 days ({v['measured']['lcp']:,} page views measured): p75, "
            f"shares and trend of every metric, p50 / p95 ms in-process vs the raw driver "
            f"reading the same {v['raw_rows']} rows (goal p95 ≤ {v['goal_p95_ms']:.0f} ms: "
            f"{'met' if met else 'missed'}) | {v['app_p50_ms']:.1f} / {v['app_p95_ms']:.1f} | "
            f"{v['raw_p50_ms']:.1f} / {v['raw_p95_ms']:.1f} | "
            f"{v['raw_p95_ms'] / v['app_p95_ms']:.2f} |"
        )
    lines.extend(_replay_player_lines(reads.get("replay_player") or {}))
    fn: dict = reads.get("funnels") or {}
    if fn:
        met = fn["cold_ratio_median"] >= fn["goal_ratio"]
        lines.append(
            f"| cold 4-step funnel over 30 days ({fn['events']:,} events): events scanned/s, "
            f"median of 3 vs the raw driver scanning the same partitions (goal ≥ "
            f"{fn['goal_ratio']}: {'met' if met else 'missed'}) | "
            f"{statistics.median(fn['cold_events_per_s']):,.0f} | "
            f"{statistics.median(fn['raw_events_per_s']):,.0f} | {fn['cold_ratio_median']:.2f} |"
        )
        met = fn["warm_p95_ms"] <= fn["goal_warm_p95_ms"]
        lines.append(
            f"| the same funnel warm (30 cached days) with its summary: p50 / p95 ms (goal p95 ≤ "
            f"{fn['goal_warm_p95_ms']:.0f}: {'met' if met else 'missed'}) | "
            f"{fn['warm_p50_ms']:.1f} / {fn['warm_p95_ms']:.1f} | — | — |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=45, help="seconds of JIT warm-up")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1, help="1 = sync workers")
    parser.add_argument("--seal-events", type=int, default=200_000)
    parser.add_argument("--ingest-only", action="store_true", help="skip reads and sealing")
    parser.add_argument(
        "--no-enrichment-baseline",
        action="store_true",
        help="skip the ingest figures with INGEST_ENRICHMENT=false",
    )
    parser.add_argument(
        "--appliers", type=int, default=1, help="run_applier processes (0: workers write plans)"
    )
    parser.add_argument(
        "--scale-out", action="store_true", help="also 5-event beacons with 1 and 2 web workers"
    )
    parser.add_argument(
        "--directory-users",
        type=int,
        default=100_000,
        help="users the directory benchmark seeds (1000000: the goal's 1 M, ~1 h on a busy "
        "node the first time; a later run on the same keyspace reuses them)",
    )
    args = parser.parse_args(argv)
    with ExitStack() as stack:
        services(stack)
        rows, reads = ingest(
            stack,
            seconds=args.seconds,
            workers=args.workers,
            threads=args.threads,
            warmup=args.warmup,
            seal_events=args.seal_events,
            full=not args.ingest_only,
            appliers=args.appliers,
            enrichment_baseline=not args.no_enrichment_baseline,
            scale_out=args.scale_out,
            directory_users=args.directory_users,
        )
    table = render(rows, reads, workers=args.workers, threads=args.threads, seconds=args.seconds)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.md").write_text(table + "\n")
    (RESULTS / "latest.json").write_text(json.dumps({"ingest": rows, "reads": reads}, indent=2))
    print("\n" + table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
