"""Where a paced /collect request's time goes (issue 59): the tail, stage by stage.

`make tail` starts the collector as `make bench` does (its keyspace, Redis, site with
goals, 4 gunicorn sync workers and the applier), with COLLECT_SERVER_TIMING on and
gunicorn's access log keeping each request's time in the worker and its Server-Timing
header. For each beacon size it measures the peak, then a paced pass at `make bench`'s
share of it, and reads for the paced pass's requests:

- wrk's p50 / p99 (what a beacon waited) beside gunicorn's (what its worker spent on it):
  the difference is the wait for a free worker, in the listen backlog;
- each ingest step's p50 / p99, and its share of the slowest 1 % of requests' time;
- Python's garbage collector within requests, Cassandra's GC pauses (the node's gc.log);
- Redis commands per request (INFO commandstats, the applier's included);
- the CPU each process used per request (/proc), and with `--spy` py-spy's CPU samples of
  the workers and the applier by stage (bench/profile.py's attribution).

`--nice-ab N` then runs paced passes with the applier at niceness 0 and at N in turn
(ABAB...), so the two are measured side by side in one run: does giving the requests
the CPU first, and the applier what is left, shorten the tail?

Written to bench/results/tail.md.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import redis as redis_lib

from bench import profile
from bench import run as bench
from bench.cpu import cassandra_pid, machine_busy, process_cpu
from ops import cassandra, redis

PAIRS = 3  # --nice-ab: passes at each niceness, in turn
# Cassandra's unified JVM log, one line a pause: "... Pause Young (Normal) (G1 Evacuation
# Pause) 301M->108M(1024M) 12.345ms".
GC_PAUSE = re.compile(r"\bPause\b.*?(\d+(?:\.\d+)?)ms\s*$")


@dataclass
class Served:
    """One request as its worker logged it: milliseconds in the worker, and by step."""

    worker_ms: float
    steps: dict[str, float] = field(default_factory=dict)


def parse_access(lines: list[str]) -> list[Served]:
    """The requests of gunicorn's access log in bench.run.ACCESS_FORMAT; lines of answers
    without a Server-Timing header (errors, preflights) are skipped."""
    served = []
    for line in lines:
        micros, _, header = line.strip().partition(" ")
        if not micros.isdigit() or ";dur=" not in header:
            continue
        steps = {}
        for part in header.split(","):
            name, _, duration = part.strip().partition(";dur=")
            steps[name] = float(duration)
        served.append(Served(int(micros) / 1000, steps))
    return served


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank percentile (q from 0 to 100) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def gc_pauses(lines: list[str]) -> list[float]:
    """Milliseconds of each pause in a stretch of the JVM's gc log."""
    return [float(m.group(1)) for line in lines if (m := GC_PAUSE.search(line))]


def redis_calls(before: dict[str, Any], after: dict[str, Any]) -> Counter[str]:
    """Commands Redis ran between two INFO commandstats, by command."""
    calls: Counter[str] = Counter()
    for key, stats in after.items():
        done = stats["calls"] - before.get(key, {}).get("calls", 0)
        if done:
            calls[key.removeprefix("cmdstat_")] = done
    return calls


def stages(served: list[Served]) -> list[tuple[str, list[float]]]:
    """Each measured stage's milliseconds over the requests, in the request's order:
    the steps, the rest of the view, the part of the worker's time outside the view."""
    steps = [name for name in served[0].steps if name not in ("gc", "total")]
    rows = [(f"step {name}", [s.steps.get(name, 0.0) for s in served]) for name in steps]
    rows.append(
        (
            "the view outside the steps (parse, site, rate limits, answer)",
            [s.steps["total"] - sum(s.steps.get(n, 0.0) for n in steps) for s in served],
        )
    )
    rows.append(
        (
            "gunicorn and Django around the view",
            [max(0.0, s.worker_ms - s.steps["total"]) for s in served],
        )
    )
    rows.append(("of which Python's garbage collector", [s.steps.get("gc", 0.0) for s in served]))
    return rows


def render_pass(result: dict[str, Any]) -> list[str]:
    """One beacon size's paced pass: where its requests' time went."""
    served: list[Served] = result["served"]
    wrk = result["wrk"]
    worker = [s.worker_ms for s in served]
    slow = sorted(served, key=lambda s: s.worker_ms)[-max(1, len(served) // 100) :]
    slow_total = sum(s.worker_ms for s in slow)
    lines = [
        "",
        f"| {result['events']}-event beacons, paced: {wrk['requests_per_second']:.0f} "
        f"requests/s ({wrk['share_of_peak']:.0%} of the peak {result['peak_rps']:.0f}), "
        f"{len(served):,} requests logged | p50 ms | p99 ms | share of the slowest 1 % |",
        "|---|---|---|---|",
        f"| wrk: sent → answered | {wrk['p50_ms']:.1f} | {wrk['p99_ms']:.1f} | — |",
        f"| waiting for a free worker (wrk minus worker, at each percentile) "
        f"| {max(0.0, wrk['p50_ms'] - percentile(worker, 50)):.1f} "
        f"| {max(0.0, wrk['p99_ms'] - percentile(worker, 99)):.1f} | — |",
        f"| in the worker (gunicorn's request time) | {percentile(worker, 50):.1f} "
        f"| {percentile(worker, 99):.1f} | 100 % ({slow_total / len(slow):.1f} ms each) |",
    ]
    by_stage = stages(served)
    slow_stages = dict(stages(slow))
    for name, values in by_stage:
        share = sum(slow_stages[name]) / slow_total if slow_total else 0.0
        lines.append(
            f"| {name} | {percentile(values, 50):.1f} | {percentile(values, 99):.1f} "
            f"| {share:.0%} |"
        )
    pauses, calls, requests = result["gc_pauses"], result["redis"], len(served)
    lines += [
        "",
        f"Cassandra's GC during the pass: {len(pauses)} pauses, "
        + (
            f"{sum(pauses):.0f} ms in all, longest {max(pauses):.1f} ms, median "
            f"{statistics.median(pauses):.1f} ms"
            if pauses
            else "none"
        )
        + f"; Redis commands per request: {sum(calls.values()) / requests:.1f} ("
        + ", ".join(f"{name} {n / requests:.2f}" for name, n in calls.most_common(6))
        + ")",
        "",
        "| CPU per request, ms (from /proc) | " + " | ".join(result["cpu"]) + " |",
        "|---" * (len(result["cpu"]) + 1) + "|",
        "| | " + " | ".join(f"{v:.1f}" for v in result["cpu"].values()) + " |",
    ]
    if result.get("spy"):
        lines += profile._table("web worker stage (py-spy, paced)", profile.STAGES, *result["spy"])
    return lines


class Window:
    """Marks taken before a paced pass, read after it: the access log's and the gc log's
    new lines, Redis's command counts, each process's CPU."""

    def __init__(self, access: Path, gunicorn: int) -> None:
        self.access = access
        self.gc_log = cassandra.node_from_env().gc_log
        self.client = redis_lib.Redis(port=bench.BENCH_REDIS_PORT)
        workers = subprocess.run(["pgrep", "-P", str(gunicorn)], capture_output=True, text=True)
        appliers = subprocess.run(
            ["pgrep", "-f", "manage.py run_applier"], capture_output=True, text=True
        )
        self.groups: dict[str, list[int | None]] = {
            "web workers": [int(p) for p in workers.stdout.split()],
            "applier": [int(p) for p in appliers.stdout.split()],
            "Cassandra": [cassandra_pid()],
            "Redis": [redis.pid_of(bench.BENCH_REDIS_PORT)],
        }
        self.result: dict[str, Any] = {}

    @staticmethod
    def _size(path: Path) -> int:
        return path.stat().st_size if path.exists() else 0

    @contextmanager
    def __call__(self) -> Iterator[None]:
        access_at, gc_at = self._size(self.access), self._size(self.gc_log)
        calls = self.client.info("commandstats")
        cpu = {k: sum(process_cpu(p) for p in pids) for k, pids in self.groups.items()}
        busy = machine_busy()
        yield
        served = parse_access(_read_from(self.access, access_at))
        used = {k: sum(process_cpu(p) for p in pids) - cpu[k] for k, pids in self.groups.items()}
        used["the rest (wrk, kernel)"] = machine_busy() - busy - sum(used.values())
        self.result = {
            "served": served,
            "gc_pauses": gc_pauses(_read_from(self.gc_log, gc_at)),
            "redis": redis_calls(calls, self.client.info("commandstats")),
            "cpu": {k: v / max(1, len(served)) * 1000 for k, v in used.items()},
        }


def _read_from(path: Path, offset: int) -> list[str]:
    if not path.exists():
        return []
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace").splitlines()


@contextmanager
def _spied(pids: list[int], seconds: int, folder: Path) -> Iterator[list[Path]]:
    """py-spy recording each web worker's CPU samples while the block runs."""
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or "py-spy"
    files = [folder / f"web-{pid}.txt" for pid in pids]
    recorders = [
        subprocess.Popen(
            [
                *(spy, "record", "--pid", str(pid), "--duration", str(seconds)),
                *("--rate", "100", "--nonblocking", "--format", "raw", "-o", str(out)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for pid, out in zip(pids, files, strict=True)
    ]
    yield files
    for recorder in recorders:
        recorder.wait(60)


def nice_ab(
    pace: Callable[[], dict[str, Any]], appliers: list[int], nice: int
) -> dict[int, list[float]]:
    """Paced passes (`pace`) with the appliers at niceness 0 and `nice` in turn: wrk's p99
    of each."""
    p99s: dict[int, list[float]] = {0: [], nice: []}
    for level in [0, nice] * PAIRS:
        for pid in appliers:
            os.setpriority(os.PRIO_PROCESS, pid, level)
        p99s[level].append(pace()["p99_ms"])
    for pid in appliers:
        os.setpriority(os.PRIO_PROCESS, pid, 0)
    return p99s


def render_ab(events: int, p99s: dict[int, list[float]]) -> list[str]:
    (plain, a), (niced, b) = p99s.items()
    return [
        "",
        f"| {events}-event beacons, paced p99 ms, the applier at niceness {plain} vs "
        f"{niced}, passes in turn | niceness {plain} | niceness {niced} | ratio of medians |",
        "|---|---|---|---|",
        f"| {' / '.join(f'{v:.0f}' for v in a)} vs {' / '.join(f'{v:.0f}' for v in b)} "
        f"| {statistics.median(a):.1f} | {statistics.median(b):.1f} "
        f"| {statistics.median(b) / statistics.median(a):.2f} |",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=30, help="each paced pass")
    parser.add_argument("--events", type=int, nargs="+", default=list(bench.BEACONS))
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--spy", action="store_true", help="py-spy the workers in a 2nd pass")
    parser.add_argument("--nice-ab", type=int, default=0, metavar="N")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="clickstream-tail-"))
    access = folder / "access.log"
    lines = [f"collector tail, {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC — "]
    lines[0] += f"{bench.machine()}; {args.workers} gunicorn sync workers and the applier"
    with ExitStack() as stack:
        bench.services(stack)
        env_extra = {"COLLECT_SERVER_TIMING": "true", "BENCH_ACCESS_LOG": str(access)}
        env, url, gunicorn = bench.collector(
            stack, workers=args.workers, threads=1, extra_env=env_extra
        )
        bench.log("warming up Cassandra's JIT and the workers for 60s ...")
        bench._wrk(url, env, events=30, seconds=60, connections=16, run="jit", visitors="jit")
        window = Window(access, gunicorn.pid)
        for events in args.events:
            peak = bench._http_figure(url, env, events=events, seconds=15, tag="tail")
            pace = partial(
                bench._paced_figure,
                url,
                env,
                events=events,
                seconds=args.seconds,
                peak_rps=peak["requests_per_second"],
                freshness=False,
            )
            paced = pace(observer=window)
            result = {**window.result, "events": events, "wrk": paced}
            result["peak_rps"] = peak["requests_per_second"]
            if args.spy:
                web = [p for p in window.groups["web workers"] if p]
                pace(observer=partial(_spied, web, args.seconds, folder))
                files = sorted(folder.glob("web-*.txt"))
                result["spy"] = profile.attribute(files, profile.STAGES)
                for spent in files:
                    spent.unlink()
            lines += render_pass(result)
            if args.nice_ab:
                appliers = [p for p in window.groups["applier"] if p]
                lines += render_ab(events, nice_ab(pace, appliers, args.nice_ab))
            bench.log(f"{events}-event beacons: {paced['p99_ms']:.1f} ms p99 paced")
    table = "\n".join(lines)
    print(table)
    bench.RESULTS.mkdir(exist_ok=True)
    (bench.RESULTS / "tail.md").write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
