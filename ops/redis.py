"""Start and stop a local Debian redis-server on a project port, state under .state/redis/."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from ops.common import STATE, StackError, is_alive, log, port_open, tail
from ops.system import apt_install


def home(port: int) -> Path:
    return STATE / "redis" / str(port)


def pid_of(port: int) -> int | None:
    try:
        pid = int((home(port) / "redis.pid").read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    return pid if is_alive(pid) else None


def redis_binary() -> str:
    binary = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
    )
    if binary:
        return binary
    apt_install(["redis-server"], why="the local Redis")
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not Path(binary).exists():
        raise StackError("redis-server is still missing after apt-get install")
    return binary


def ping(port: int) -> bool:
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def start(port: int, *, timeout: float = 20.0) -> bool:
    """Start redis-server on 127.0.0.1:port unless one answers; return True if started."""
    if ping(port):
        log(f"redis already answering on 127.0.0.1:{port}")
        return False
    if port_open("127.0.0.1", port):
        raise StackError(f"port 127.0.0.1:{port} is taken by something that is not Redis")
    binary = redis_binary()
    folder = home(port)
    folder.mkdir(parents=True, exist_ok=True)
    logfile = folder / "redis.log"
    # No persistence: everything queued in Redis can be re-derived from Cassandra
    # (beat sweeps), and the test suite flushes it on purpose.
    command = [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--protected-mode",
        "yes",
        "--save",
        "",
        "--appendonly",
        "no",
        "--daemonize",
        "no",
        "--dir",
        str(folder),
        "--logfile",
        str(logfile),
        # Bounded: only keys with a TTL may be evicted (dedup marks, cached session
        # states, rate counters; a lost one falls back to Cassandra), never the Celery
        # queues or the applier queue, which have none.
        "--maxmemory",
        os.environ.get("REDIS_MAXMEMORY", "512mb"),
        "--maxmemory-policy",
        "volatile-lru",
    ]
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    (folder / "redis.pid").write_text(f"{process.pid}\n")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ping(port):
            log(f"redis ready on 127.0.0.1:{port} (log: {logfile})")
            return True
        if process.poll() is not None:
            break
        time.sleep(0.2)
    raise StackError(
        f"redis-server did not start on port {port}. Log: {logfile}\n{tail(logfile, 15)}"
    )


def stop(port: int) -> None:
    pid = pid_of(port)
    if pid is None:
        return
    log(f"stopping redis on port {port} (pid {pid})")
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and is_alive(pid):
        time.sleep(0.1)
    if is_alive(pid):
        os.kill(pid, signal.SIGKILL)
    (home(port) / "redis.pid").unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("--port", type=int, default=int(os.environ.get("REDIS_PORT", "6380")))
    args = parser.parse_args(argv)
    try:
        if args.action == "start":
            start(args.port)
        elif args.action == "stop":
            stop(args.port)
        else:
            state = "ok" if ping(args.port) else "down"
            print(f"redis:{args.port} pid={pid_of(args.port)} ping={state}")
    except StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
