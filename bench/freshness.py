"""Accepted → visible: how long after /collect's 200 an event can be read, measured while
`make bench`'s paced load runs (bench/run.py starts a Prober beside each paced pass).

The prober sends a one-event beacon for a site of its own every PERIOD seconds, each a new
visitor on a page of its own, and after the 200 polls the two reads an analyst makes:

- the realtime box's: the page in its minute's set of viewed paths (what
  `realtime.realtime_now` sums; the collector adds it before answering);
- a session's page: the visitor's session in their session list and its timeline
  (`session_timeline`), written by the applier after the answer.

Its own site keeps the realtime check exact (no other traffic's paths) while the
collector, the applier and Cassandra carry the paced load of the benchmark's site.
Imported after django.setup() (it reads the models).
"""

from __future__ import annotations

import json
import statistics
import threading
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from typing import Any

from sessions_app.domain.ingest import realtime
from sessions_app.domain.ledger import sites
from sessions_app.domain.sessions.timeline import session_timeline
from sessions_app.foundation.core.redis_client import redis_client
from sessions_app.foundation.tables import user_sessions

GOAL_P99_MS = 2000.0
PERIOD = 0.5  # seconds between two probes
POLL = 0.01  # seconds between two reads of a probe
DEADLINE = 10.0  # a probe not visible by then counts as this late
ORIGIN = "https://fresh.example"
# A browser's: a bot's page views (urllib's agent is one) are kept out of the realtime box.
AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36"
)


def prober_site() -> Any:
    """A site for the probes alone."""
    return sites.site_create(name=f"bench-freshness-{int(time.time())}", origins=[ORIGIN])


class Prober(threading.Thread):
    """Probes until stopped; `figures()` then gives the waits, in ms after the 200."""

    def __init__(self, collect_url: str, site: Any, run: str) -> None:
        super().__init__(daemon=True)
        self.url, self.site, self.run_name = collect_url, site, run
        self.stop = threading.Event()
        self.waits: dict[str, list[float]] = {"timeline": [], "realtime": []}
        self.errors: list[str] = []

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            began = time.monotonic()
            try:
                self._probe(n)
            except Exception as exc:  # noqa: BLE001 - recorded: a figure with errors says so
                self.errors.append(f"{type(exc).__name__}: {exc}")
            n += 1
            self.stop.wait(max(0.0, PERIOD - (time.monotonic() - began)))

    def _probe(self, n: int) -> None:
        visitor, path = f"fresh-{self.run_name}-{n}", f"/fresh/{self.run_name}/{n}"
        event = {
            "id": f"{visitor}-e",
            "type": "pageview",
            "ts": datetime.now(UTC).isoformat(),
            "anonymous_id": visitor,
            "url": ORIGIN + path,
        }
        body = json.dumps({"site": self.site.key, "events": [event]}).encode()
        request = urllib.request.Request(  # noqa: S310 - the bench's own loopback collector
            self.url,
            data=body,
            headers={"Content-Type": "text/plain", "Origin": ORIGIN, "User-Agent": AGENT},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - loopback
            accepted = json.loads(answer.read())["accepted"]
        acknowledged = time.monotonic()
        if accepted != 1:
            raise AssertionError(f"probe {n} not accepted: {accepted}")
        pending = {"timeline": self._in_timeline, "realtime": self._in_realtime}
        while pending:
            waited = time.monotonic() - acknowledged
            for name, seen in list(pending.items()):
                if waited >= DEADLINE or seen(visitor, path):
                    self.waits[name].append(min(waited, DEADLINE) * 1000)
                    del pending[name]
            if pending:
                time.sleep(POLL)

    def _in_timeline(self, visitor: str, path: str) -> bool:
        listed = user_sessions.session_list(site_id=self.site.id, user_key=visitor, limit=1)
        return bool(listed) and (
            session_timeline(site_id=self.site.id, session_id=listed[0]["session_id"]) is not None
        )

    def _in_realtime(self, visitor: str, path: str) -> bool:
        now = datetime.now(UTC)
        for minute in (now, now - timedelta(minutes=1)):  # received in this minute or the last
            _, paths = realtime.minute_keys(self.site.id, minute)
            if redis_client().zscore(paths, path):
                return True
        return False

    def figures(self) -> dict[str, Any]:
        """p50 / p99 of each wait (ms), the probes, the late ones and any error."""
        found: dict[str, Any] = {"probes": len(self.waits["timeline"]), "errors": self.errors[:3]}
        for name, waits in self.waits.items():
            ordered = sorted(waits) or [DEADLINE * 1000]
            found[f"{name}_p50_ms"] = statistics.median(ordered)
            found[f"{name}_p99_ms"] = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
            found[f"{name}_late"] = sum(w >= DEADLINE * 1000 for w in waits)
        found["goal_p99_ms"] = GOAL_P99_MS
        found["met"] = max(found["timeline_p99_ms"], found["realtime_p99_ms"]) <= GOAL_P99_MS
        return found
