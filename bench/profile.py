"""Where the collector's time goes: py-spy samples every gunicorn worker under a wrk load.

`make profile` (after `make bench`'s set-up: its keyspace, Redis and site) starts gunicorn
like the ingest benchmark, warms it up, then records each worker with py-spy while wrk
sends 30-event beacons, and prints each stage's share of the workers' CPU samples. Stages
are matched by function name in the sampled stacks (the driver's compiled code shows up
in the Python frame that called it). Written to bench/results/profile.md.
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
from ops.common import log

# (stage, frame pattern) — the first stage whose pattern is in a stack takes the sample.
STAGES = [
    ("driver I/O thread: sending, receiving, decoding responses", r"LibevLoop\._run_loop"),
    ("Redis: dedup marks, session locks and cache (2 Lua calls)", r"collector/coordination\.py"),
    ("validation of every field", r"\b_validate \(sessions_app"),
    ("sessionization and the plan (ids, buckets, summaries)", r"\b_plan \(sessions_app"),
    ("transaction-log write (plan encoding + 2 statements, waited)", r"\blog_write \("),
    ("apply: binding rows into per-partition batches", r"_event_statements|_session_statements"),
    ("apply: handing statements to the driver (execute_async)", r"\b_run\.<locals>\.<listcomp>"),
    ("apply: waiting for Cassandra's answers", r"\b_wait_all \("),
    ("rest of the request pipeline (parse, rate limits, response)", r"\bcollect \(sessions_app"),
    ("gunicorn + Django around the view (middleware, HTTP)", r"SyncWorker\.handle"),
    ("gunicorn idle/accept loop", r"SyncWorker"),
]


def _attribute(files: list[Path]) -> tuple[Counter[str], int]:
    shares: Counter[str] = Counter()
    total = 0
    for path in files:
        for line in path.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if not count.isdigit():
                continue
            samples = int(count)
            total += samples
            for stage, pattern in STAGES:
                if re.search(pattern, stack):
                    shares[stage] += samples
                    break
            else:
                shares["other"] += samples
    return shares, total


def render(shares: Counter[str], total: int, *, rps: float, workers: int, seconds: int) -> str:
    lines = [
        f"collector profile, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC — {bench.machine()}",
        f"py-spy (100 Hz, non-blocking) on {workers} gunicorn sync workers for {seconds}s, "
        f"wrk 16 connections sending 30-event beacons ({rps:.0f} requests/s while sampled)",
        "",
        "| stage | share of worker CPU samples |",
        "|---|---|",
    ]
    for stage, _ in [*STAGES, ("other", "")]:
        if shares[stage]:
            lines.append(f"| {stage} | {shares[stage] / total:.1%} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--workers", type=int, default=4)
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
            events=30,
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
                    str(folder / f"{pid}.txt"),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for pid in workers
        ]
        load = bench._wrk(
            url,
            env,
            events=30,
            seconds=args.seconds + 2,
            connections=16,
            run=f"pm-{time.time()}",
            visitors="profile",
        )
        for recorder in recorders:
            recorder.wait(60)
        shares, total = _attribute(sorted(folder.glob("*.txt")))
        if not total:
            print("py-spy recorded nothing (is ptrace allowed here?)", file=sys.stderr)
            return 1
        table = render(
            shares,
            total,
            rps=load["requests_per_second"],
            workers=args.workers,
            seconds=args.seconds,
        )
        print(table)
        bench.RESULTS.mkdir(exist_ok=True)
        (bench.RESULTS / "profile.md").write_text(table + "\n")
        os.killpg(gunicorn.pid, signal.SIGTERM)
    return 0


if __name__ == "__main__":
    sys.exit(main())
