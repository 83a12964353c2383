"""Replay storage benchmark (issue 41.6; run by bench/run.py, or alone; prints JSON).

The recording: bench/replay_demo_session.json.gz, the recorder's chunks of a minute on the
demo shop in headless Chromium, three page loads (tests/e2e/test_replay_recording.py
writes such a file), each chunk gzip-compressed here (level 6, as fflate in the page).

  (a) ingest: VISITORS visitors each send the recording (new chunk ids, their own
      session, started with a tracker event) through `replays.chunks.chunk_accept`, what
      POST /replay runs after its origin and rate checks (inflate, checks, the session
      from Redis, the session's budget, stylesheets stored once, the write), from THREADS
      threads; vs the raw driver writing the same compressed blobs with replay_chunks'
      prepared INSERT (another site id, the same table) from as many threads. Compressed
      MB/s of chunks stored; rounds alternate; goal ≥ 0.7 of the raw driver.
  (b) bytes stored per minute of the recorded session: its chunks as the collector
      stores them (the shop's stylesheet a reference; the stylesheet itself is stored once
      for the site: `asset_bytes`), and as the recorder sent them (without the shared
      stylesheets), per minute of recording.

  DJANGO_SETTINGS_MODULE=clickstream.settings.local CASSANDRA_KEYSPACE=bench_replay \\
      python -m bench.replay [VISITORS] [RUNS]
"""

from __future__ import annotations

import gzip
import json
import os
import statistics
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clickstream.settings.local")
django.setup()

from bench.node import settle  # noqa: E402
from bench.timing import sizes  # noqa: E402
from sessions_app.domain.ingest.pipeline import Source, events_record  # noqa: E402
from sessions_app.domain.ledger import sites  # noqa: E402
from sessions_app.features.replays import chunks  # noqa: E402
from sessions_app.foundation.core.cql import cassandra_session, prepare  # noqa: E402
from sessions_app.foundation.core.ids import time_uuid  # noqa: E402
from sessions_app.foundation.tables import replay_assets, replay_chunks, user_sessions  # noqa: E402

RECORDING = Path(__file__).with_name("replay_demo_session.json.gz")
THREADS = 8
GOAL_RATIO = 0.7
SIZES = "SELECT size, data FROM {ks}.replay_chunks WHERE site_id = ? AND session_id = ?"


def recording() -> list[dict[str, Any]]:
    """The recorded chunks (inflated JSON bodies), in the order they were sent."""
    return list(json.loads(gzip.decompress(RECORDING.read_bytes())))


def _ms(value: datetime) -> int:
    return round(value.timestamp() * 1000)


def visitor_bodies(
    site: Any, recorded: list[dict[str, Any]], visitor: str, began: datetime
) -> list[bytes]:
    """The recording as one visitor's chunks from `began` (new ids and times), gzipped;
    without `sent_at`: sent all at once, each chunk's clock-skew correction would differ."""
    first = min(b["start"] for b in recorded)
    bodies = []
    for body in recorded:
        moved = {k: v for k, v in body.items() if k not in ("user_id", "last_event", "sent_at")}
        for name in ("page", "start", "end"):
            if name in body:
                moved[name] = _ms(began) + body[name] - first
        moved.update(site=site.key, chunk=str(uuid.uuid4()), anonymous_id=visitor)
        text = json.dumps(moved, separators=(",", ":")).encode()
        bodies.append(gzip.compress(text, compresslevel=6))
    return bodies


def visitors_start(site: Any, names: list[str], began: datetime) -> None:
    """Each visitor's session: a tracker page view at `began` (what the chunks need)."""
    for name in names:
        event = {
            "id": f"pv-{name}",
            "type": "pageview",
            "ts": began.isoformat(),
            "anonymous_id": name,
            "url": "https://shop.example/demo/",
        }
        events_record(source=Source(site=site, received_at=began), raw_events=[event])


def _threads(call: Any, items: list[Any]) -> float:
    """Seconds to run call over items from THREADS threads."""
    began = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(call, items))
    return time.perf_counter() - began


def app_round(site: Any, bodies: list[bytes]) -> float:
    """Compressed MB/s of the chunks accepted through the collector's code."""

    def accept(body: bytes) -> None:  # a refused chunk raises ChunkError: the run stops
        chunks.chunk_accept(site, body, received_at=datetime.now(UTC))

    return sum(map(len, bodies)) / 2**20 / _threads(accept, bodies)


def raw_round(rows: list[replay_chunks.Row]) -> float:
    """Compressed MB/s of the same blobs written by the raw driver, same table."""
    statement = prepare(replay_chunks.INSERT, idempotent=True, write=True)
    session = cassandra_session()
    seconds = _threads(lambda row: session.execute(statement, row), rows)
    return sum(r.size for r in rows) / 2**20 / seconds


def raw_rows(bodies: list[bytes], per: int, now: datetime) -> list[replay_chunks.Row]:
    """The blobs as rows of another site (one session a visitor's `per` chunks)."""
    site_id, rows = uuid.uuid4(), []
    for n, body in enumerate(bodies):
        rows.append(
            replay_chunks.Row(
                site_id=site_id,
                session_id=time_uuid(now, f"s{n // per}"),
                page_start=now,
                seq=n % per,
                chunk_id=uuid.uuid4(),
                user_key=f"raw-{n // per}",
                last_event_id=None,
                start_at=now,
                end_at=now,
                events=1,
                size=len(body),
                data=body,
                ttl=30 * 86_400,
            )
        )
    return rows


def per_minute(
    site: Any, recorded: list[dict[str, Any]], sent: list[bytes], session_id: uuid.UUID
) -> dict[str, Any]:
    """(b): one recorded session's bytes per minute, stored and as sent."""
    minutes = (max(b["end"] for b in recorded) - min(b["start"] for b in recorded)) / 60_000
    rows = list(cassandra_session().execute(prepare(SIZES), (site.id, session_id)))
    texts = [gzip.decompress(r["data"]) for r in rows]
    hashes = {h for t in texts for h in _hashes(t)}
    stored = replay_assets.assets_read(site_id=site.id, hashes=sorted(hashes))
    chunk_bytes = sum(r["size"] for r in rows)
    return {
        "recording_minutes": round(minutes, 2),
        "chunks": len(rows),
        "stored_bytes_per_min": round(chunk_bytes / minutes),
        "sent_bytes_per_min": round(sum(map(len, sent)) / minutes),
        "asset_bytes": sum(len(d) for d in stored.values()),
        "assets": len(stored),
    }


def _hashes(text: bytes) -> list[str]:
    marker, found, at = b'{"_cs_asset":"', [], 0
    while (at := text.find(marker, at)) != -1:
        at += len(marker)
        found.append(text[at : at + 64].decode())
    return found


def main() -> None:
    visitors, runs = sizes(100, 3)
    site = sites.site_create(name=f"replay-{int(time.time())}", origins=[])
    site.replay = True
    site.save(update_fields=["replay"])
    recorded = recording()
    now = datetime.now(UTC).replace(microsecond=0)
    began = now - timedelta(minutes=3)
    names = [[f"r{run}-v{v}" for v in range(visitors)] for run in range(runs)]
    visitors_start(site, [n for run in names for n in run], began)
    bodies = [
        [b for name in run for b in visitor_bodies(site, recorded, name, began)] for run in names
    ]
    raws = [raw_rows(b, len(recorded), now) for b in bodies]
    settled = settle()
    app_rounds, raw_rounds = [], []
    for run in range(runs):
        app_rounds.append(app_round(site, bodies[run]))
        raw_rounds.append(raw_round(raws[run]))
    ratios = [a / r for a, r in zip(app_rounds, raw_rounds, strict=True)]
    [first] = user_sessions.session_list(site_id=site.id, user_key=names[0][0])
    sent = bodies[0][: len(recorded)]
    print(
        json.dumps(
            {
                "visitors": visitors,
                "runs": runs,
                "threads": THREADS,
                "chunks_per_round": len(bodies[0]),
                "mb_per_round": round(sum(map(len, bodies[0])) / 2**20, 2),
                "settled_after_s": settled,
                "app_mb_s": [round(x, 2) for x in app_rounds],
                "raw_mb_s": [round(x, 2) for x in raw_rounds],
                "ratios": [round(x, 3) for x in ratios],
                "ratio_median": round(statistics.median(ratios), 3),
                "goal_ratio": GOAL_RATIO,
                **per_minute(site, recorded, sent, first["session_id"]),
            }
        )
    )


if __name__ == "__main__":
    main()
