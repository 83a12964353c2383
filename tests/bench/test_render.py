"""The bench table shows every figure it measured: beacons of 30, 5 and 1 events, the
paced (below saturation) latency beside its share of the peak, and the scale-out rows."""

from __future__ import annotations

from bench import run


def _figure(eps: float, rps: float, p50: float, p99: float) -> dict[str, float]:
    return {
        "events_per_second": eps,
        "requests_per_second": rps,
        "p50_ms": p50,
        "p99_ms": p99,
        "errors": 0,
    }


def test_render_has_a_row_for_each_measurement():
    rows = [
        {
            "beacon": n,
            "http": _figure(100.0 * n, 100.0, 20.0, 80.0),
            "raw": _figure(150.0 * n, 150.0, 10.0, 40.0),
            "paced": {**_figure(80.0 * n, 80.0, 12.0, 60.0), "share_of_peak": 0.8},
        }
        for n in run.BEACONS
    ]
    rows[0]["scale_out"] = {"1": _figure(300.0, 60.0, 9.0, 30.0), "4": rows[1]["http"]}
    missed = {**_figure(80.0, 80.0, 12.0, 160.0), "share_of_peak": 0.8}
    rows.append({**rows[0], "scale_out": None, "paced": missed})
    rows[1]["paced"]["freshness"] = {
        "probes": 40,
        "timeline_p50_ms": 31.0,
        "timeline_p99_ms": 2100.0,
        "realtime_p50_ms": 1.0,
        "realtime_p99_ms": 3.0,
        "goal_p99_ms": 2000.0,
        "met": False,
    }
    table = run.render(rows, {}, workers=4, threads=1, seconds=20)
    assert "latency p50 / p99 ms (goal p99 ≤ 150: missed) | 12.0 / 160.0 |" in table
    assert (
        "| accepted → visible under the paced 5-event load (40 one-event probes, a site of "
        "their own): ms after the 200 until the session list and timeline show it, p50 / p99; "
        "realtime, p50 / p99 (goal p99 ≤ 2000: missed) | 31 / 2100; 1 / 3 | — | — |"
    ) in table
    for n in run.BEACONS:
        assert f"| ingest, {n}-event beacons: clicks/s (HTTP /collect vs raw driver" in table
        goal = run.PACED_GOAL_P99_MS[n]
        assert (
            f"| ingest, {n}-event beacons, paced at 80% of the peak request rate "
            f"(80 requests/s): latency p50 / p99 ms (goal p99 ≤ {goal:.0f}: met) | 12.0 / 60.0 |"
        ) in table
    assert (
        "| ingest, 1-event beacons: clicks/s (HTTP /collect vs raw driver, same rows) "
        "| 100 | 150 | 0.67 |" in table
    )
    assert "| ingest, 5-event beacons, 1 web worker(s) + 1 applier: clicks/s | 300 |" in table
    assert "| ingest, 5-event beacons, 4 web worker(s) + 1 applier: clicks/s | 500 |" in table
