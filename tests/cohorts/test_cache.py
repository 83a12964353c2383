"""A report's answer is kept under a key that every change to its sets changes: a warm
call reads no sets, a late event (reopen, reseal) and an erasure (it edits the sets in
place) each give the recounted answer, equal to the brute force."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app import tasks
from sessions_app.domain.aggregates import usersets
from sessions_app.domain.erasure import erasures
from sessions_app.domain.ledger import sites
from sessions_app.features.cohorts import reads
from sessions_app.foundation.models import ErasureRequest
from tests.support.cohorts import brute_cohorts, query_of, raw_rows, send
from tests.support.sealing import seal_due

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def triangle(site):
    query = query_of("week")
    answer = reads.cohorts(site.id, query, now=timezone.now())
    return [(r["size"], r["counts"]) for r in answer["cohorts"]], query


@pytest.mark.heavy
def test_a_cached_answer_follows_late_events_and_erasures(monkeypatch, erasure_in_process):
    site = sites.site_create(name="Cached", origins=["https://shop.example"])
    for u, days in enumerate([(8, 15, 22), (9, 16), (10, 24), (12,)]):
        for d in days:
            send(site, f"u{u}-ü", d, 60 * u + d, signup=False)
    seal_due(site)
    first, query = triangle(site)
    assert first == brute_cohorts(raw_rows(site), query)
    reads_of_sets = []
    monkeypatch.setattr(usersets, "sets_read_many", lambda **kw: reads_of_sets.append(kw) or {})
    assert triangle(site)[0] == first and not reads_of_sets  # warm: no set read
    monkeypatch.undo()
    # A late event of a new user reopens a sealed day: once resealed, counted.
    send(site, "late-ü", 11, 5, signup=False, received=timezone.now())
    seal_due(site)
    late, _ = triangle(site)
    assert late != first and late == brute_cohorts(raw_rows(site), query)
    # An erasure removes the user from the stored sets in place: the answer follows.
    root = User.objects.create_superuser("root", password="pw-root-123")
    request = erasures.erasure_request(
        site=site, key="u0-ü", kind=ErasureRequest.ANONYMOUS_ID, requested_by=root
    )
    tasks.erase_user.apply(args=[str(request.pk)]).get()
    erased, _ = triangle(site)
    assert erased != late and erased == brute_cohorts(raw_rows(site), query)
