"""Dependencies: requirements.lock pins everything pyproject.toml asks for, past the
floors set for known advisories; `make install` installs from it."""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement
from packaging.version import Version

from tests.conftest import ROOT


def _pins() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)==([^\s;]+)", line)
        if match:
            pins[re.sub(r"[-_.]+", "-", match[1]).lower()] = Version(match[2])
    return pins


def test_the_lock_pins_every_dependency_within_pyproject_ranges():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["dev"]
    pins = _pins()
    for text in wanted:
        requirement = Requirement(text)
        name = re.sub(r"[-_.]+", "-", requirement.name).lower()
        assert name in pins, f"{name} is not in requirements.lock (make lock)"
        assert requirement.specifier.contains(pins[name], prereleases=True), (name, pins[name])
    assert "cassandra-driver" not in pins  # scylla-driver provides the cassandra module


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


def test_make_installs_from_the_lock():
    makefile = (ROOT / "Makefile").read_text()
    assert "pip install -q -r requirements.lock" in makefile
    assert "--no-deps -e ." in makefile
    assert "pip-audit" in makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
