"""The collector's check of `$vitals` events (aggregates/vitals.vitals_problem): each bad
payload refused with the field and the reason, the good one beside them kept, all counted
in ingest_stats."""

from __future__ import annotations

import pytest

from sessions_app.domain.ledger import quality
from tests.support.events import event, post

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

BAD = [
    ({}, "props", "needs props"),
    ({"pageview": "v", "lcp": 1200, "speed": 3}, "props.speed", "not a vitals field"),
    ({"lcp": 1200}, "props.pageview", "required"),
    ({"pageview": "v"}, "props", "no metric"),
    ({"pageview": "v", "lcp": -1}, "props.lcp", "milliseconds from 0 to 600000"),
    ({"pageview": "v", "inp": "fast"}, "props.inp", "milliseconds"),
    ({"pageview": "v", "cls": 1e9}, "props.cls", "a score from 0 to 100"),
    ({"pageview": "v", "ttfb": True}, "props.ttfb", "milliseconds"),
    ({"pageview": "v", "fcp": 10, "lcp_el": "img"}, "props.lcp_el", "without its metric"),
    ({"pageview": "v", "lcp": 10, "lcp_el": "x" * 600}, "props.lcp_el", "at most 512"),
    ({"pageview": "v", "cls": 0.1, "cls_el": "a\nb"}, "props.cls_el", "CSS selector"),
]


def test_bad_vitals_payloads_are_refused_with_the_field_and_counted(client, site, live_now):
    props = {"pageview": "v1", "lcp": 2400.5, "lcp_el": "img.hero", "cls": 0}
    good = event(live_now, kind="custom", name="$vitals", props=props)
    bad = [
        event(live_now, kind="custom", name="$vitals", props=props or None) for props, _, _ in BAD
    ]
    no_url = event(live_now, kind="custom", name="$vitals", props={"pageview": "v", "lcp": 1})
    del no_url["url"]
    response = post(client, site, [good, *bad, no_url])
    assert response.status_code == 200
    answer = response.json()
    assert answer["accepted"] == 1
    reasons = {r["index"]: r["reason"] for r in answer["rejected"]}
    for i, (_, field, words) in enumerate(BAD, start=1):
        assert reasons[i].startswith(f"events[{i}].{field}: "), (i, reasons[i])
        assert words in reasons[i], (i, reasons[i])
    assert reasons[len(BAD) + 1].startswith(f"events[{len(BAD) + 1}].url: required")
    counts = quality.ingest_counts(site_id=site.id, hour=live_now)
    assert counts["received"] == len(BAD) + 2 and counts["accepted"] == 1
    assert sum(counts["rejected"].values()) == len(BAD) + 1
