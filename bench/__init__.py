"""`make bench`: bench/run.py runs every module here; bench/RESULTS.md keeps the figures."""

import os

# BENCH_SMOKE=1 (tests/bench/test_smoke.py): the same code over a few days of data and a
# warm-up of one round, to prove a module still runs; its figures mean nothing.
SMOKE = os.environ.get("BENCH_SMOKE") == "1"
