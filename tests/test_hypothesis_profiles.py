"""The Hypothesis profiles (tests/support/hypothesis.py): which one the environment picks,
and the example counts, database and blob each one gives."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase

from tests.support.hypothesis import examples, profile_load, profile_name


@pytest.fixture
def restored() -> Iterator[None]:
    """Load profiles freely: the one the run started with is loaded again after."""
    started = settings.get_current_profile_name()
    yield
    settings.load_profile(started)


def test_the_environment_picks_the_profile():
    assert profile_name({}) == "dev"
    assert profile_name({"CI": "true"}) == "ci"
    assert profile_name({"CI": "true", "HYPOTHESIS_PROFILE": "deep"}) == "deep"
    assert profile_name({"HYPOTHESIS_PROFILE": "ci"}) == "ci"
    assert profile_name({"HYPOTHESIS_PROFILE": "quick"}) == "quick"
    with pytest.raises(ValueError, match="'nightly'"):
        profile_name({"HYPOTHESIS_PROFILE": "nightly"})


@pytest.mark.parametrize(
    ("environ", "name", "factor"),
    [
        ({"CI": "true"}, "ci", 1),
        ({}, "dev", 1),
        ({"HYPOTHESIS_PROFILE": "deep"}, "deep", 10),
    ],
)
def test_each_profile_gives_its_example_counts(restored, environ, name, factor):
    assert profile_load(environ) == name
    assert settings.get_current_profile_name() == name
    assert settings().max_examples == 100 * factor  # a test without max_examples=
    assert [examples(n) for n in (2, 300, 2000)] == [2 * factor, 300 * factor, 2000 * factor]


def test_quick_runs_a_fifth_and_never_fewer_than_one(restored):
    assert profile_load({"HYPOTHESIS_PROFILE": "quick"}) == "quick"
    assert settings().max_examples == 20
    assert [examples(n) for n in (1, 2, 3, 12, 300, 2000)] == [1, 1, 1, 2, 60, 400]
    assert isinstance(settings().database, DirectoryBasedExampleDatabase)


def test_ci_keeps_no_database_and_prints_the_blob_dev_keeps_its_database(restored):
    profile_load({"CI": "true"})
    assert settings().database is None
    assert settings().print_blob is True
    assert settings().deadline is None  # as Hypothesis's own ci profile: derandomized too
    assert settings().derandomize is True
    for environ in ({}, {"HYPOTHESIS_PROFILE": "deep"}, {"HYPOTHESIS_PROFILE": "quick"}):
        profile_load(environ)
        assert isinstance(settings().database, DirectoryBasedExampleDatabase)
        assert settings().derandomize is False
