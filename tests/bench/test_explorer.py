"""The session explorer benchmark seeds what it says and times like with like.

Its raw-driver baseline is the ceiling the explorer's ratio is judged against: it must
read the explorer's partitions with the explorer's statements and find the same
sessions, and its selective filter must stay selective, or the figures say nothing.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from sessions_app.foundation.core import timebuckets

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def test_the_seeded_filters_and_the_raw_baseline_agree_with_the_explorer(site_id, monkeypatch):
    from bench import explorer

    # A third filter that matches a few dozen of the sessions: the page never fills, so
    # it shows every one of them, and every partition of the range is read.
    monkeypatch.setitem(explorer.FILTERS, "few", {"country": "DE", "device": "tablet"})
    monkeypatch.setitem(explorer.GOALS_MS, "few", 100.0)
    now = timezone.now().replace(microsecond=0)
    seeded = explorer.seed(site_id, 3000, now)

    assert seeded["sessions"] == 3000
    assert seeded["fraction"]["selective"] <= 0.01
    assert 0.4 <= seeded["fraction"]["broad"] <= 0.6
    assert 0 < seeded["matched"]["few"] < explorer.LIMIT

    measured = explorer.measure(site_id, now, runs=2, warmup=1)

    day = timebuckets.Width.DAY
    days = (
        timebuckets.floor(now - timedelta(microseconds=1), day)
        - timebuckets.floor(now - timedelta(days=explorer.DAYS), day)
    ).days + 1
    every = days * max(1, settings.SESSION_SHARDS)
    assert set(measured) == {"selective", "broad", "few"}
    for name, m in measured.items():
        assert m["same_sessions"], name
        assert m["partitions_read"] == m["raw_partitions_read"], name
        assert m["page_sessions"] == min(explorer.LIMIT, seeded["matched"][name]), name
        assert m["app_p50_ms"] > 0 and m["raw_p95_ms"] >= m["raw_p50_ms"] > 0
    assert measured["selective"]["partitions_read"] == measured["few"]["partitions_read"] == every
    assert measured["few"]["raw_rows"] == seeded["matched"]["few"]
    assert measured["broad"]["partitions_read"] < every
