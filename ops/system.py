"""Install Debian packages the stack needs, or say exactly how to."""

from __future__ import annotations

import os
import subprocess

from ops.common import STATE, StackError, log

_updated = STATE / ".apt-updated"


def apt_install(packages: list[str], *, why: str) -> None:
    """Install packages with apt-get when running as root; otherwise explain how."""
    command = "apt-get install -y " + " ".join(packages)
    if os.geteuid() != 0:
        raise StackError(f"{why} needs {' '.join(packages)}; run as root: sudo {command}")
    log(f"installing {' '.join(packages)} for {why} (apt-get) ...")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if not _updated.exists():
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        STATE.mkdir(parents=True, exist_ok=True)
        _updated.touch()
    result = subprocess.run(
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise StackError(f"{command} failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
