"""CPU accounting from /proc: per process and for the whole machine (Linux)."""

from __future__ import annotations

import os
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int | None) -> float:
    """CPU seconds (user + system) a process has used so far; 0 if it is gone."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def machine_busy() -> float:
    """CPU seconds all cores have spent busy (not idle or waiting on I/O) since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return (sum(values[:8]) - idle) / TICK


def cassandra_pid() -> int | None:
    """The local node's JVM pid (None when it is not this project's node)."""
    from ops.cassandra import node_from_env, node_pid

    return node_pid(node_from_env())
