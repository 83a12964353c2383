"""Where the collector's time goes: py-spy samples every gunicorn worker under a wrk load.

`make profile` (after `make bench`'s set-up: its keyspace, Redis and site) starts gunicorn
and the applier like the ingest benchmark, warms them up, then records each worker and
the applier with py-spy while wrk sends 30-event beacons (`--events N` for others), and
prints the CPU each process used per request (from /proc) and each stage's share of the
samples. A web worker's stages are the ingest steps, by name (domain/ingest/pipeline.py), matched
by their module in the sampled stacks (the driver's compiled code shows up in the Python
frame that called it). Written to bench/results/profile.md.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

from bench import run as bench
from bench.cpu import cassandra_pid, machine_busy, process_cpu
from ops import redis
from ops.common import log

# The ingest steps (ingest/pipeline.STEPS, tests/ingest/test_pipeline.py keeps the two
# the same), each one module of ingest/steps/: a sample is its step's when the step's
# function is in its stack.
STEP_NAMES = (
    "validate",
    "dedupe",
    "enrich",
    "sessionize",
    "plan",
    "log",
    "queue",
    "buckets",
    "apply",
)
# (stage, frame pattern) — the first stage whose pattern is in a stack takes the sample.
STAGES = [
    ("driver I/O thread: sending, receiving, decoding responses", r"LibevLoop\._run_loop"),
    *((f"step {name}", rf"\b{name} \([^)]*ingest/steps/{name}\.py") for name in STEP_NAMES),
    ("rest of the request pipeline (parse, rate limits, response)", r"\bcollect \(sessions_app"),
    ("gunicorn + Django around the view (middleware, HTTP)", r"SyncWorker\.handle"),
    ("gunicorn idle/accept loop", r"SyncWorker"),
]
APPLIER_STAGES = [
    ("driver I/O thread: sending, receiving, decoding responses", r"LibevLoop\._run_loop"),
    ("popping plans from Redis", r"\bdrain_once \(.*(redis|socket)"),
    ("decoding plans (zlib, JSON, records)", r"\bplan_decode \("),
    ("dropping erased keys", r"\bsuppressed_keys \(|\bplan_without \("),
    ("rows of every table, grouped by partition", r"\bevent_groups \(|\bsession_rows \("),
    ("binding rows and packing batches by replicas", r"\bpack_by_replicas \(|\bplans_apply \("),
    ("handing statements to the driver and waiting", r"\bexecute_all \(|\bwait_all \("),
    ("applier loop (announce, Redis)", r"\brun \(sessions_app"),
]


def attribute(files: list[Path], stages: list[tuple[str, str]]) -> tuple[Counter[str], int]:
    shares: Counter[str] = Counter()
    total = 0
    for path in files:
        for line in path.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if not count.isdigit():
                continue
            samples = int(count)
            total += samples
            for stage, pattern in stages:
                if re.search(pattern, stack):
                    shares[stage] += samples
                    break
            else:
                shares["other"] += samples
    return shares, total


def _table(
    title: str, stages: list[tuple[str, str]], shares: Counter[str], total: int
) -> list[str]:
    lines = ["", f"| {title} | share of its CPU samples |", "|---|---|"]
    for stage, _ in [*stages, ("other", "")]:
        if shares[stage]:
            lines.append(f"| {stage} | {shares[stage] / total:.1%} |")
    return lines


def render(
    web: tuple[Counter[str], int],
    applied: tuple[Counter[str], int],
    cpu: dict[str, float],
    *,
    rps: float,
    sampled_rps: float,
    workers: int,
    seconds: int,
    events: int = 30,
) -> str:
    lines = [
        f"collector profile, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC — {bench.machine()}",
        f"wrk 16 connections sending {events}-event beacons to {workers} gunicorn sync workers and "
        f"the applier; {seconds}s without sampling ({rps:.0f} requests/s), then {seconds}s of "
        f"py-spy at 100 Hz, non-blocking, on every worker and the applier "
        f"({sampled_rps:.0f} requests/s)",
        "",
        f"| CPU per request ({events} events), from /proc, unsampled run | ms |",
        "|---|---|",
    ]
    for name, value in cpu.items():
        lines.append(f"| {name} | {value:.1f} |")
    lines += _table("web worker stage", STAGES, *web)
    if applied[1]:
        lines += _table("applier stage", APPLIER_STAGES, *applied)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--events", type=int, default=30, help="events per beacon")
    args = parser.parse_args(argv)
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if spy is None:
        print("py-spy is missing: pip install py-spy (make install does)", file=sys.stderr)
        return 2
    with ExitStack() as stack:
        bench.services(stack)
        env, url, gunicorn = bench.collector(stack, workers=args.workers, threads=1)
        log("warming up for 30s ...")
        bench._wrk(
            url,
            env,
            events=args.events,
            seconds=30,
            connections=16,
            run=f"pw-{time.time()}",
            visitors="profile",
        )
        workers = [
            int(p)
            for p in subprocess.run(
                ["pgrep", "-P", str(gunicorn.pid)], capture_output=True, text=True
            ).stdout.split()
        ]
        appliers = [
            int(p)
            for p in subprocess.run(
                ["pgrep", "-f", "manage.py run_applier"], capture_output=True, text=True
            ).stdout.split()
        ]
        # CPU per request first, without py-spy (whose sampling costs CPU of its own).
        groups: dict[str, list[int | None]] = {
            "web workers": list(workers),
            "applier": list(appliers),
            "Cassandra": [cassandra_pid()],
            "Redis": [redis.pid_of(bench.BENCH_REDIS_PORT)],
        }
        before = {k: sum(process_cpu(p) for p in pids) for k, pids in groups.items()}
        busy_before = machine_busy()
        measured = bench._wrk(
            url,
            env,
            events=args.events,
            seconds=args.seconds,
            connections=16,
            run=f"pc-{time.time()}",
            visitors="profile",
        )
        bench._drained(env)
        requests = measured["events"] / args.events
        used: dict[str, float] = {
            k: sum(process_cpu(p) for p in pids) - before[k] for k, pids in groups.items()
        }
        used["everything else (wrk, kernel, gunicorn master)"] = (
            machine_busy() - busy_before - sum(used.values())
        )
        cpu = {k: v / requests * 1000 for k, v in used.items()}
        folder = Path(tempfile.mkdtemp(prefix="clickstream-profile-"))
        recorders = [
            subprocess.Popen(
                [
                    spy,
                    "record",
                    "--pid",
                    str(pid),
                    "--duration",
                    str(args.seconds),
                    "--rate",
                    "100",
                    "--nonblocking",
                    "--format",
                    "raw",
                    "-o",
                    str(folder / f"{'applier' if pid in appliers else 'web'}-{pid}.txt"),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for pid in workers + appliers
        ]
        load = bench._wrk(
            url,
            env,
            events=args.events,
            seconds=args.seconds + 2,
            connections=16,
            run=f"pm-{time.time()}",
            visitors="profile",
        )
        for recorder in recorders:
            recorder.wait(60)
        web = attribute(sorted(folder.glob("web-*.txt")), STAGES)
        applied = attribute(sorted(folder.glob("applier-*.txt")), APPLIER_STAGES)
        if not web[1]:
            print("py-spy recorded nothing (is ptrace allowed here?)", file=sys.stderr)
            return 1
        table = render(
            web,
            applied,
            cpu,
            rps=measured["requests_per_second"],
            sampled_rps=load["requests_per_second"],
            workers=args.workers,
            seconds=args.seconds,
            events=args.events,
        )
        print(table)
        bench.RESULTS.mkdir(exist_ok=True)
        (bench.RESULTS / "profile.md").write_text(table + "\n")
        os.killpg(gunicorn.pid, signal.SIGTERM)
    return 0


if __name__ == "__main__":
    sys.exit(main())
