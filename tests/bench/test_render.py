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
    table = run.render(rows, {}, workers=4, threads=1, seconds=20)
    for n in run.BEACONS:
        assert f"| ingest, {n}-event beacons: clicks/s (HTTP /collect vs raw driver" in table
        assert (
            f"| ingest, {n}-event beacons, paced at 80% of the peak request rate "
            "(80 requests/s): latency p50 / p99 ms (goal p99 ≤ 100) | 12.0 / 60.0 |"
        ) in table
    assert (
        "| ingest, 1-event beacons: clicks/s (HTTP /collect vs raw driver, same rows) "
        "| 100 | 150 | 0.67 |" in table
    )
    assert "| ingest, 5-event beacons, 1 web worker(s) + 1 applier: clicks/s | 300 |" in table
    assert "| ingest, 5-event beacons, 4 web worker(s) + 1 applier: clicks/s | 500 |" in table
