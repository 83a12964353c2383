"""Retention cohorts, lifecycle and stickiness (features/cohorts/reads.py, from the sealed user sets
of domain/aggregates/usersets.py) against a brute-force recount of the raw rows: Hypothesis draws
who is active on which UTC days (users active in many periods, some doing "signup", some
active only before the range: not new in it) and late events that reopen sealed days;
every unit (day, week, month)."""

from __future__ import annotations

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from sessions_app.domain.ledger import sites
from tests.support.cohorts import SPAN_DAYS, assert_exact, send
from tests.support.hypothesis import examples
from tests.support.sealing import seal_due

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


activity = st.lists(
    st.tuples(
        st.lists(st.integers(0, SPAN_DAYS - 1), min_size=1, max_size=6, unique=True),
        st.booleans(),
    ),
    min_size=2,
    max_size=6,
)


# No shrinking: every example seals a month of hours; a failing one is reported as drawn.
@settings(
    max_examples=examples(3),
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(
    activity=activity,
    # Late events arrive now: their days must be within the collector's 30 days.
    late=st.lists(st.tuples(st.integers(0, 7), st.integers(5, SPAN_DAYS - 1)), max_size=3),
)
def test_cohorts_lifecycle_and_stickiness_equal_the_brute_force(activity, late):
    site = sites.site_create(name="Cohorts", origins=["https://shop.example"])
    for u, (days, signs) in enumerate(activity):
        for d in days:
            send(site, f"u{u}-ü", d, 60 * (u % 20) + d, signup=signs and d % 2 == 0)
    seal_due(site)
    assert_exact(site)
    # Late events (a known user or a new one) reopen sealed days; once resealed, exact again.
    for who, day in late:
        send(site, f"u{who}-ü", day, 23 * 60 + 5, signup=True, received=timezone.now())
    if late:
        seal_due(site)
        assert_exact(site)
