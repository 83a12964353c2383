"""`make run` and `make test`: start what is missing, run, stop what this process started.

run:  local Cassandra + Redis, schema, demo data, admin login, Celery workers (the
      default queue; the analysis queue) and beat, the web app on 127.0.0.1:8000;
      Ctrl-C stops everything it started.
test: local Cassandra (reusing a running node: tests use a `test_` keyspace) and a
      separate Redis on its own port, then pytest; stops what it started. With
      --checks, the checks before pytest (CHECKS) run while the services start.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

from ops import cassandra, redis
from ops.common import ROOT, STATE, StackError, log
from ops.system import apt_install

PYTHON = sys.executable
RUN_REDIS_PORT = int(os.environ.get("REDIS_PORT", "6380"))
TEST_REDIS_PORT = int(os.environ.get("TEST_REDIS_PORT", "6381"))
WEB_ADDRESS = os.environ.get("WEB_ADDRESS", "127.0.0.1:8000")
LOGS = STATE / "logs"
BIN = Path(PYTHON).parent

# What `make test` checks before pytest: the tracker's tests and size, lint, types, the
# layers, dead code. They run while the node starts (about 30 s, most of it the JVM's
# own start), so neither waits for the other on 2 cores.
CHECKS: tuple[tuple[str, ...], ...] = (
    ("npm", "test", "--silent"),
    ("npm", "run", "--silent", "size"),
    (str(BIN / "ruff"), "check", "."),
    (str(BIN / "mypy"), "clickstream", "sessions_app", "ops", "bench"),
    (str(BIN / "lint-imports"), "--no-cache"),
    (str(BIN / "vulture"),),
)


def _checks() -> int:
    """Run CHECKS in turn; the first that fails stops them (its exit status)."""
    for command in CHECKS:
        code = subprocess.run(command, cwd=ROOT).returncode
        if code:
            print(f"\nerror: {' '.join(command)} exited with {code}", file=sys.stderr)
            return code
    return 0


def _local_cassandra(stack: ExitStack) -> None:
    """Start the local node unless CASSANDRA_HOSTS points elsewhere; stop it on exit."""
    hosts = os.environ.get("CASSANDRA_HOSTS", "")
    if hosts and hosts not in ("127.0.0.1", "localhost"):
        log(f"CASSANDRA_HOSTS={hosts}: using that cluster, no local node")
        return
    node = cassandra.node_from_env()
    if cassandra.start(node):
        stack.callback(cassandra.stop, node)


def _local_redis(stack: ExitStack, port: int) -> None:
    if redis.start(port):
        stack.callback(redis.stop, port)


def _manage(*args: str, env: dict[str, str]) -> None:
    subprocess.run([PYTHON, "manage.py", *args], cwd=ROOT, env=env, check=True)


class Children:
    """Long-running child processes, each in its own process group, logs in .state/logs."""

    def __init__(self) -> None:
        self.processes: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        LOGS.mkdir(parents=True, exist_ok=True)
        with open(LOGS / f"{name}.log", "ab") as out:
            process = subprocess.Popen(
                argv,
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes.append((name, process))

    def dead(self) -> list[str]:
        return [name for name, process in self.processes if process.poll() is not None]

    def stop(self) -> None:
        # SIGTERM to each main process, not its group: the Celery worker then shuts down
        # warm, its pool finishing the tasks at hand (SIGTERM to the pool killed them
        # mid-task: WorkerLostError tracebacks in worker.log). What is left in a group
        # once its leader exited (runserver's reloaded child) is ended after.
        for name, process in reversed(self.processes):
            if process.poll() is None:
                log(f"stopping {name}")
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for _name, process in self.processes:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)


def _wait_http(url: str, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    status = 0
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=3) as response:  # noqa: S310 - loopback
                return int(response.status)
        except urllib.error.HTTPError as exc:
            status = exc.code
            if status == 503:
                time.sleep(1)
                continue
            return status
        except OSError:
            time.sleep(0.5)
    return status


def run() -> int:
    started = time.monotonic()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": os.environ.get(
            "DJANGO_SETTINGS_MODULE", "clickstream.settings.local"
        ),
        "REDIS_URL": os.environ.get("REDIS_URL", f"redis://127.0.0.1:{RUN_REDIS_PORT}/0"),
        "PYTHONUNBUFFERED": "1",
    }
    children = Children()
    stop_requested = False

    def _request_stop(_signum: int, _frame: object) -> None:
        nonlocal stop_requested
        stop_requested = True

    with ExitStack() as stack:
        _local_redis(stack, RUN_REDIS_PORT)
        _local_cassandra(stack)
        _manage("migrate", "--noinput", "-v", "0", env=env)
        _manage("sync_cassandra", env=env)
        _manage("cassandra_indexes", env=env)
        _manage("bootstrap_local", env=env)
        stack.callback(children.stop)
        signal.signal(signal.SIGINT, _request_stop)
        signal.signal(signal.SIGTERM, _request_stop)
        celery = [PYTHON, "-m", "celery", "-A", "clickstream"]
        worker = [*celery, "worker", "-l", "INFO", "--concurrency", "2"]
        children.start("worker", [*worker, "-Q", "celery", "-n", "worker@%h"], env)
        # Funnel scans on their own queue: never in front of sealing and erasure.
        children.start("analysis-worker", [*worker, "-Q", "analysis", "-n", "analysis@%h"], env)
        children.start(
            "beat", [*celery, "beat", "-l", "INFO", "-s", str(STATE / "celerybeat-schedule")], env
        )
        children.start("applier", [PYTHON, "manage.py", "run_applier"], env)
        children.start("web", [PYTHON, "manage.py", "runserver", WEB_ADDRESS], env)
        status = _wait_http(f"http://{WEB_ADDRESS}/healthz", timeout=60)
        login_file = STATE / "admin_password"
        password = os.environ.get("CLICKSTREAM_ADMIN_PASSWORD") or (
            login_file.read_text().strip() if login_file.exists() else "(see above)"
        )
        print(
            f"\n  clickstream is up in {time.monotonic() - started:.0f}s (health {status})\n"
            f"  app       http://{WEB_ADDRESS}/\n"
            f"  health    http://{WEB_ADDRESS}/healthz (details for admins: /healthz/deep)\n"
            f"  admin     http://{WEB_ADDRESS}/admin/\n"
            f"  login     admin / {password}\n"
            f"  logs      {LOGS}/ (web, applier, worker, analysis-worker, beat), "
            f"{cassandra.node_from_env().system_log}\n"
            "  debug     off unless DEBUG=1 (make run DEBUG=1: Django's debug pages)\n"
            "  Ctrl-C stops everything this command started.\n",
            flush=True,
        )
        while not stop_requested:
            dead = children.dead()
            if dead:
                log(f"{', '.join(dead)} exited; see {LOGS}/. Stopping.")
                return 1
            time.sleep(1)
        log("stopping ...")
    return 0


# The font Chromium lays the pages out with: the demo shop's recorded click targets
# (sessions_app/domain/system/demo_layout.json, tests/e2e/test_demo_data.py) are measured with
# it. chromium only recommends it, and a machine with DejaVu alone draws wider buttons.
BROWSER_FONT = Path("/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf")


def _browser() -> None:
    """Install Debian's Chromium and its font for the end-to-end tests when missing."""
    missing = [
        package
        for package, path in (
            ("chromium", Path("/usr/bin/chromium")),
            ("fonts-liberation", BROWSER_FONT),
        )
        if not path.exists()
    ]
    if missing:
        apt_install(missing, why="the browser tests (headless Chromium)")


def test(pytest_args: list[str], *, checks: bool = False) -> int:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "clickstream.settings.test",
        "REDIS_URL": f"redis://127.0.0.1:{TEST_REDIS_PORT}/0",
        "CELERY_BROKER_URL": f"redis://127.0.0.1:{TEST_REDIS_PORT}/0",
        "CELERY_RESULT_BACKEND": f"redis://127.0.0.1:{TEST_REDIS_PORT}/0",
        "PYTHONUNBUFFERED": "1",
        # Compiled modules, pytest's assertion-rewritten test modules among them, are kept
        # in .state/pycache, even where PYTHONDONTWRITEBYTECODE keeps them out of the tree:
        # without them each pytest process rewrote ~470 modules again, ~8 s a run.
        "PYTHONPYCACHEPREFIX": str(STATE / "pycache"),
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    _browser()
    with ExitStack() as stack, ThreadPoolExecutor(1, thread_name_prefix="checks") as pool:
        checked = pool.submit(_checks) if checks else None
        _local_redis(stack, TEST_REDIS_PORT)
        _local_cassandra(stack)
        if checked is not None and (failed := checked.result()):
            return failed
        speed = reference_seconds()
        before, started = cpu_times(), time.monotonic()
        result = subprocess.run([PYTHON, "-m", "pytest", *pytest_args], cwd=ROOT, env=env)
        log(f"pytest took {time.monotonic() - started:.0f} s; {cpu_shares(before, cpu_times())}")
        after = reference_seconds()
        log(f"a core's speed: the reference loop took {speed:.2f} s before, {after:.2f} s after")
        return result.returncode


REFERENCE_LOOPS = 3_000_000


def reference_seconds(loops: int = REFERENCE_LOOPS) -> float:
    """The median of three timings of a fixed pure-Python loop: a core's speed, by which
    one run's time is compared with another's. The host's other guests can slow a core
    without it showing as steal: on 2026-12-07 the raw driver's writes per second (the
    benchmark's baseline, code unchanged) fell by a third to two fifths within hours, a
    node's start took 20 s instead of 13, and the same tests twice as long."""
    timings = []
    for _ in range(3):
        started, total = time.perf_counter(), 0
        for i in range(loops):
            total += i * i % 7
        timings.append(time.perf_counter() - started)
    return sorted(timings)[1]


def cpu_times(stat: Path = Path("/proc/stat")) -> list[int]:
    """The machine's CPU time so far, in ticks: user, nice, system, idle, iowait, irq,
    softirq, steal (the first line of /proc/stat); empty where there is none."""
    try:
        first = stat.read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return []
    return [int(n) for n in first[1:9]]


def cpu_shares(before: list[int], after: list[int]) -> str:
    """How the cores' time went between two readings: busy, idle, and stolen by the host
    (a virtual machine's neighbours: a run with much steal is slower, not the suite)."""
    spent = [b - a for a, b in zip(before, after, strict=False)]
    total = sum(spent)
    if len(spent) < 8 or total <= 0:
        return "CPU shares unknown"
    idle, steal = spent[3] + spent[4], spent[7]
    busy = total - idle - steal
    shares = (busy / total, idle / total, steal / total)
    return "CPU busy {:.0%}, idle {:.0%}, stolen by the host {:.0%}".format(*shares)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--checks", action="store_true", help="test: also run CHECKS first")
    parser.add_argument("command", choices=["run", "test"])
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            return run()
        rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
        return test(rest, checks=args.checks)
    except StackError as exc:
        print(f"\nerror: {exc}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as exc:
        print(
            f"\nerror: {' '.join(map(str, exc.cmd))} exited with {exc.returncode}", file=sys.stderr
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
