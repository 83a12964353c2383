"""Dependencies: requirements.lock pins what the app runs on and requirements-dev.lock the
same plus the dev tools, every pin with its hashes, past the floors set for known
advisories; `make install` and the Docker image install from them with --require-hashes."""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement
from packaging.version import Version

from tests.support.repo import ROOT

LOCKS = ("requirements.lock", "requirements-dev.lock")


def _entries(lock: str) -> list[str]:
    """The lock's requirements, each with its continuation lines joined."""
    text = (ROOT / lock).read_text().replace("\\\n", " ")
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def _pins(lock: str = "requirements.lock") -> dict[str, Version]:
    pins = {}
    for entry in _entries(lock):
        match = re.match(r"^([A-Za-z0-9_.-]+)==([^\s;]+)", entry)
        if match:
            pins[_name(match[1])] = Version(match[2])
    return pins


def test_the_locks_pin_every_dependency_within_pyproject_ranges():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime, dev = project["dependencies"], project["optional-dependencies"]["dev"]
    for lock, wanted in (("requirements.lock", runtime), ("requirements-dev.lock", runtime + dev)):
        pins = _pins(lock)
        for text in wanted:
            requirement = Requirement(text)
            name = _name(requirement.name)
            assert name in pins, f"{name} is not in {lock} (make lock)"
            assert requirement.specifier.contains(pins[name], prereleases=True), (name, pins[name])
        assert "cassandra-driver" not in pins  # scylla-driver provides the cassandra module


def test_every_locked_requirement_is_exact_and_hashed():
    for lock in LOCKS:
        entries = _entries(lock)
        assert len(entries) > 40, lock
        for entry in entries:
            assert re.match(r"^[A-Za-z0-9_.-]+==[^\s;]+ ", entry), f"{lock}: not exact: {entry}"
            assert re.search(r"--hash=sha256:[0-9a-f]{64}", entry), f"{lock}: no hash: {entry}"


def test_the_runtime_lock_holds_no_dev_tools_and_the_dev_lock_the_same_pins():
    runtime, dev = _pins("requirements.lock"), _pins("requirements-dev.lock")
    tools = {"pytest", "ruff", "mypy", "pip-audit", "pip-tools", "hypothesis", "playwright"}
    assert tools <= set(dev) and not tools & set(runtime)
    # Installed together: a package in both has one version (make lock: -c requirements.lock).
    assert {name: dev.get(name) for name in runtime} == runtime


def test_floors_are_past_known_advisories():
    pins = _pins()
    assert pins["django"] >= Version("5.2.8")
    assert pins["djangorestframework"] >= Version("3.15.2")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    floors = {
        Requirement(r).name.lower(): Requirement(r).specifier for r in project["dependencies"]
    }
    assert not floors["django"].contains("5.2.7") and not floors["djangorestframework"].contains(
        "3.15.1"
    )


def _target(makefile: str, name: str) -> str:
    return makefile.split(f"\n{name}:", 1)[1].split("\n\n", 1)[0]


def test_make_installs_from_both_locks_with_hashes():
    makefile = (ROOT / "Makefile").read_text()
    stamp = next(line for line in makefile.splitlines() if line.startswith("STAMP :="))
    assert all(lock in stamp for lock in LOCKS)  # a new pin reinstalls
    install = _target(makefile, "$(STAMP)")
    assert all(lock in install.split(":", 1)[0] for lock in LOCKS)
    installs = [line for line in install.splitlines() if "pip install" in line]
    assert "--require-hashes -r requirements.lock -r requirements-dev.lock" in installs[-2]
    assert "--no-deps -e ." in installs[-1]
    assert all(
        "--require-hashes" in line or "--no-deps" in line or "--upgrade pip" in line
        for line in installs
    )
    # uv, which installs the locks, is itself pinned with its hashes.
    assert "pip install -q --require-hashes -r $(UV_LOCK)" in install
    assert "$(UV_LOCK)" in stamp and "UV_LOCK := ops/requirements-uv.lock" in makefile
    [uv] = _entries("ops/requirements-uv.lock")
    assert re.match(r"^uv==[^\s;]+\s+--hash=sha256:[0-9a-f]{64}", uv), uv
    audit = _target(makefile, "lint")
    assert "pip-audit" in audit and all(f"-r {lock}" in audit for lock in LOCKS)
    lock = _target(makefile, "lock")
    assert "--generate-hashes" in makefile.split("\nLOCK_ARGS :=", 1)[1].split("\n", 1)[0]
    assert "-o requirements.lock" in lock
    assert "--extra dev -c requirements.lock -o requirements-dev.lock" in lock
