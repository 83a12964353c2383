"""Shared helpers for the local stack scripts (stdlib only)."""

from __future__ import annotations

import os
import socket
import sys
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATE = Path(os.environ.get("CLICKSTREAM_STATE_DIR", ROOT / ".state"))


class StackError(RuntimeError):
    """A local service could not be installed, started or stopped."""


def log(message: str) -> None:
    print(f"[stack] {message}", file=sys.stderr, flush=True)


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still answers kill(0); treat it as gone.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def tail(path: Path, lines: int) -> str:
    try:
        with open(path, errors="replace") as handle:
            return "".join(deque(handle, maxlen=lines))
    except FileNotFoundError:
        return f"({path} does not exist)"
