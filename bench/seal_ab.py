"""The seal row of bench/sealing.py as an A/B: two source trees seal the same hour, in turn.

`python -m bench.seal_ab EVENTS ROUNDS TREE [TREE ...]` (in the bench environment, as
bench/run.py's steps run) has each TREE write one hour of EVENTS events (bench.sealing's
data, with that tree's own tallies; the trees at once), then ROUNDS times, for each TREE
in turn, runs a fresh process in that tree which, three times as bench.sealing.seal
does, reads its hour's raw rows (the raw driver's figure) and seals the hour from its
tallies, then from its raw rows, each after the node settles. A run's ratios are the
median raw read's time over each seal's median; the medians of the runs come last.
Prints JSON lines.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

# What each tree's process runs first: bench.sealing's hour, written by that tree's code
# (`_hour_of_events`, and site_create in `services`, before issue 36). Prints the site id
# and the hour.
SET_UP = """
import os, sys, time
from datetime import UTC, datetime, timedelta
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.local")
django.setup()
from bench import sealing
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import BucketState, Site
write = getattr(sealing, "hour_of_events", None) or getattr(sealing, "_hour_of_events")
sites = getattr(sealing, "sites", None) or getattr(sealing, "services")
site = sites.site_create(name=f"seal-ab-{time.time()}", origins=[])
Site.objects.filter(pk=site.pk).update(event_shards=sealing.SHARDS)
site.refresh_from_db()
hour = timebuckets.floor(datetime.now(UTC) - timedelta(hours=6), "hour")
write(site, hour, int(sys.argv[1]))
BucketState.objects.get_or_create(
    site=site, granularity="hour", bucket=hour, defaults={"shards": sealing.SHARDS}
)
print(site.id, hour.isoformat())
"""
# Then, each round: the same calls bench.sealing.seal times.
ONE_RUN = """
import json, os, statistics, sys, time, uuid
from datetime import UTC, datetime
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.local")
django.setup()
from bench.node import settle
from bench.sealing import SCAN, SHARDS
from sessions_app.domain.aggregates.seal import bucket_seal
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.models import BucketState
site_id, hour = uuid.UUID(sys.argv[1]), datetime.fromisoformat(sys.argv[2])
state = BucketState.objects.filter(site_id=site_id, granularity="hour", bucket=hour)
scan, figures = prepare(SCAN), {"scan_s": [], "seal_s": [], "seal_raw_s": []}
for _ in range(3):  # as bench.sealing.seal: the medians of three, statements prepared once
    settle()
    started = time.perf_counter()
    futures = [cassandra_session().execute_async(scan, (site_id, hour, s)) for s in range(SHARDS)]
    rows = sum(1 for f in futures for _ in f.result())
    figures["scan_s"].append(time.perf_counter() - started)
    for name, tallies in (("seal_s", True), ("seal_raw_s", False)):
        state.update(partials=tallies)
        settle()
        started = time.perf_counter()
        bucket_seal(site_id=site_id, hour=hour, now=datetime.now(UTC))
        figures[name].append(time.perf_counter() - started)
figures = {name: statistics.median(found) for name, found in figures.items()}
print(json.dumps({"rows": rows, **figures}))
"""


def main() -> None:
    events, rounds, trees = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    writing = {
        tree: subprocess.Popen(
            [sys.executable, "-c", SET_UP, str(events)],
            cwd=tree,
            stdout=subprocess.PIPE,
            text=True,
        )
        for tree in trees
    }
    hours = {}
    for tree, process in writing.items():
        out, _ = process.communicate()
        assert process.returncode == 0, tree
        hours[tree] = out.strip().splitlines()[-1].split()
    ratios: dict[str, dict[str, list[float]]] = {t: {"tallies": [], "raw": []} for t in trees}
    for n in range(rounds):
        for tree in trees:
            done = subprocess.run(
                [sys.executable, "-c", ONE_RUN, *hours[tree]],
                cwd=tree,
                capture_output=True,
                text=True,
                check=True,
            )
            run = json.loads(done.stdout.strip().splitlines()[-1])
            ratios[tree]["tallies"].append(run["scan_s"] / run["seal_s"])
            ratios[tree]["raw"].append(run["scan_s"] / run["seal_raw_s"])
            print(json.dumps({"round": n, "tree": tree, **run}), flush=True)
    for tree, found in ratios.items():
        medians = {k: round(statistics.median(v), 2) for k, v in found.items()}
        runs = {k: [round(r, 2) for r in v] for k, v in found.items()}
        print(json.dumps({"tree": tree, "median": medians, "runs": runs}), flush=True)


if __name__ == "__main__":
    main()
