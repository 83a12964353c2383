"""Hypothesis profiles, loaded by tests/conftest.py before any test module is imported.

- `ci` (when the `CI` environment variable is set): today's example counts, no example
  database (a clean clone has none to reuse), failures printed with their blob to
  reproduce them; otherwise Hypothesis's own `ci` profile (derandomized, no deadline).
- `dev` (the default elsewhere): today's example counts, failing examples kept in the
  example database (`.hypothesis/`, git-ignored) and tried first on the next run.
- `deep`: ten times the examples, for a longer run (`HYPOTHESIS_PROFILE=deep`).
- `quick`: a fifth of the examples (at least one), what `make test-quick` loads unless
  HYPOTHESIS_PROFILE names another: the inner loop while working, with the dev profile's
  database, so a failure found by a longer run is tried first here too. `make test` and
  CI never load it.

`HYPOTHESIS_PROFILE` names the profile explicitly. A `max_examples=` written in a test's
`@settings` overrides any profile, so tests write `max_examples=examples(300)`: 300 under
ci and dev, 3,000 under deep, 60 under quick.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from fractions import Fraction

from hypothesis import settings

BASE_EXAMPLES = 100  # Hypothesis's default, what a test without max_examples= runs
DEEP_FACTOR = 10
QUICK_FACTOR = Fraction(1, 5)
FACTORS: dict[str, Fraction | int] = {"ci": 1, "dev": 1, "deep": DEEP_FACTOR, "quick": QUICK_FACTOR}

settings.register_profile(
    "ci",
    settings.get_profile("ci"),
    max_examples=BASE_EXAMPLES,
    database=None,
    print_blob=True,
)
settings.register_profile("dev", settings.get_profile("default"), max_examples=BASE_EXAMPLES)
settings.register_profile(
    "deep", settings.get_profile("dev"), max_examples=BASE_EXAMPLES * DEEP_FACTOR
)
settings.register_profile(
    "quick", settings.get_profile("dev"), max_examples=int(BASE_EXAMPLES * QUICK_FACTOR)
)


def profile_name(environ: Mapping[str, str] = os.environ) -> str:
    """HYPOTHESIS_PROFILE if set, else `ci` under CI, else `dev`."""
    name = environ.get("HYPOTHESIS_PROFILE") or ("ci" if "CI" in environ else "dev")
    if name not in FACTORS:
        raise ValueError(f"HYPOTHESIS_PROFILE={name!r}: choose one of {sorted(FACTORS)}")
    return name


def profile_load(environ: Mapping[str, str] = os.environ) -> str:
    """Load the profile the environment names; return its name."""
    name = profile_name(environ)
    settings.load_profile(name)
    return name


def examples(n: int) -> int:
    """A test's example count under the loaded profile: n times its factor, at least one."""
    return max(1, round(n * FACTORS.get(settings.get_current_profile_name(), 1)))
