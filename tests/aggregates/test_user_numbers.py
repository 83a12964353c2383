"""The users' per-site numbers a seal gives its user sets (aggregates/usersets.numbers_of):
looked up KEYS_PER_READ users a request, so a seal of thousands of users reads a few
dozen requests, and each user keeps the number it was given."""

from __future__ import annotations

import pytest

from sessions_app.domain.aggregates import usersets
from sessions_app.foundation.tables import user_numbers

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def test_numbers_given_are_read_back_across_several_requests(site):
    keys = [f"user-{n}-ü 页" for n in range(user_numbers.KEYS_PER_READ * 2 + 7)]
    given = usersets.numbers_of(site.id, keys[: user_numbers.KEYS_PER_READ + 3], assign=True)
    assert sorted(given.values()) == list(range(user_numbers.KEYS_PER_READ + 3))
    # The rest are new: the ones numbered already keep their numbers, the others get the next.
    everyone = usersets.numbers_of(site.id, keys, assign=True)
    assert {k: everyone[k] for k in given} == given
    assert sorted(everyone.values()) == list(range(len(keys)))
    assert usersets.numbers_of(site.id, [*keys, "never seen"], assign=False) == everyone
