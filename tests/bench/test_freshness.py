"""The accepted → visible prober (bench/freshness.py) times what it says: each probe is a
new visitor's page view, acknowledged, then found in the session list, the timeline and
the realtime paths."""

from __future__ import annotations

import time

import pytest

from sessions_app.foundation.tables import user_sessions

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "cassandra"])


def test_the_prober_times_probes_that_are_stored_and_counted(live_server):
    from bench import freshness

    site = freshness.prober_site()
    prober = freshness.Prober(f"{live_server.url}/collect", site, "t")
    prober.start()
    deadline = time.monotonic() + 60
    while len(prober.waits["timeline"]) < 4:
        assert time.monotonic() < deadline and not prober.errors, prober.errors
        time.sleep(0.05)
    prober.stop.set()
    prober.join(30)

    found = prober.figures()
    probes = found["probes"]
    assert probes >= 4 and found["errors"] == []
    assert found["timeline_late"] == found["realtime_late"] == 0
    # Without an applier the collector writes each plan before answering: visible at once.
    assert 0 <= found["timeline_p50_ms"] <= found["timeline_p99_ms"] < freshness.DEADLINE * 1000
    assert found["met"] is (max(found["timeline_p99_ms"], found["realtime_p99_ms"]) <= 2000)
    for n in range(probes):
        [summary] = user_sessions.session_list(site_id=site.id, user_key=f"fresh-t-{n}")
        assert summary["event_count"] == 1 and summary["entry_url"].endswith(f"/fresh/t/{n}")
