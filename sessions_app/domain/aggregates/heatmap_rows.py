"""bucket_heatmaps' rows: a bucket's heatmap counts written whole, and read back.

A row keeps apart what a read needs from what only some reads do: `counts` (JSON:
clicks, elements, scroll, folds, dropped, the elements' texts) and `cells` (packed uint32
pairs: cell, clicks) for every heatmap; `detail` (JSON: the elements' box grids) for
rollups; `samples` (JSON: the latest flagged clicks, who and where) for rollups and the
analyst's page, with a TTL that ends it with the raw rows of its oldest click; `clicks`
alone for the layout switch.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import orjson

from sessions_app.domain.aggregates.heatmaps import (
    GRID_COLUMNS,
    MAX_ROWS,
    Heat,
    Key,
    heat_json,
    heat_of,
    latest,
    text_merge,
    trimmed,
)
from sessions_app.domain.aggregates.stored import bucket_overwrite
from sessions_app.domain.ledger import policies
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.tables import bucket_heatmaps

LIGHT = ("clicks", "elements", "scroll", "folds", "dropped", "texts")


def _columns(heat: Heat) -> tuple[str, bytes, str, int]:
    body = heat_json(heat)
    cells = np.array(sorted(heat.cells.items()), np.uint32).tobytes() if heat.cells else b""
    light = {k: body[k] for k in LIGHT}
    detail = orjson.dumps({"spots": body["spots"]}).decode()
    return orjson.dumps(light).decode(), cells, detail, heat.clicks


def _samples(
    site_id: uuid.UUID, granularity: str, bucket: datetime, stored: dict[Key, Heat], ttl: int
) -> Iterator[tuple[tuple[Any, ...], int]]:
    """Each row's latest flagged clicks, with a TTL that ends them no later than the raw
    rows of the oldest (none once those may be gone)."""
    for (page, vp), heat in stored.items():
        found = {label: latest(kept) for label, kept in heat.samples.items() if kept}
        if not found:
            continue
        oldest = min(s[0] for labelled in found.values() for s in labelled)
        at = timebuckets.EPOCH + timedelta(milliseconds=oldest)
        own = policies.derived_ttl_seconds(at, ceiling=ttl)
        if own > 0:
            yield (site_id, granularity, bucket, page, vp, orjson.dumps(found).decode()), own


def _pairs(blob: bytes | None) -> np.ndarray:
    return np.frombuffer(blob or b"", np.uint32).reshape(-1, 2)


def _heat(row: dict[str, Any]) -> Heat:
    body = {**orjson.loads(row["counts"]), **orjson.loads(row["detail"] or "{}")}
    body["cells"] = _pairs(row["cells"]).tolist()
    body["samples"] = orjson.loads(row["samples"] or "{}")
    return heat_of(body)


def heat_write(
    *,
    site_id: uuid.UUID,
    granularity: str,
    bucket: datetime,
    value: dict[Key, Heat],
    ttl: int,
    now: datetime,
) -> None:
    """Overwrite a bucket's rows (a reseal's rows replace the earlier ones whole)."""
    bucket_overwrite(
        delete=bucket_heatmaps.DELETE_BUCKET,
        key=(site_id, granularity, bucket),
        insert=bucket_heatmaps.UPSERT,
        rows=(
            (site_id, granularity, bucket, page, vp, *_columns(heat))
            for (page, vp), heat in value.items()
        ),
        now=now,
        ttl=ttl,
        apart=(
            bucket_heatmaps.UPSERT_SAMPLES,
            _samples(site_id, granularity, bucket, value, ttl),
        ),
    )


def buckets_read(
    *, site_id: uuid.UUID, buckets: list[tuple[str, datetime]]
) -> list[dict[Key, Heat]]:
    """Every row of each of these (granularity, bucket)s, whole."""
    statement = prepare(bucket_heatmaps.SELECT_BUCKET)
    db = cassandra_session()
    futures = [db.execute_async(statement, (site_id, g, b)) for g, b in buckets]
    return [{(r["page"], r["vp"]): _heat(r) for r in f.result()} for f in futures]


def layout_clicks(
    *, site_id: uuid.UUID, buckets: list[tuple[str, datetime]], page: str
) -> Counter[str]:
    """The page's clicks per layout over these buckets (the clicks column alone)."""
    statement = prepare(bucket_heatmaps.SELECT_PAGE_CLICKS)
    db = cassandra_session()
    futures = [db.execute_async(statement, (site_id, g, b, page)) for g, b in buckets]
    found: Counter[str] = Counter()
    for future in futures:
        for r in future.result():
            found[r["vp"]] += r["clicks"] or 0
    return found


def layout_merge(
    *,
    site_id: uuid.UUID,
    buckets: list[tuple[str, datetime]],
    page: str,
    vp: str,
    live: list[Heat],
    samples: bool,
) -> Heat:
    """One layout of a page over these buckets and the `live` counts, merged: the cells
    with numpy, no box grids; the latest flagged clicks only if `samples`."""
    statement = prepare(
        bucket_heatmaps.SELECT_LAYOUT_SAMPLES if samples else bucket_heatmaps.SELECT_LAYOUT
    )
    db = cassandra_session()
    futures = [db.execute_async(statement, (site_id, g, b, page, vp)) for g, b in buckets]
    total = Heat()
    cells = [np.array(list(h.cells.items()), np.int64).reshape(-1, 2) for h in live]
    for heat in live:
        _light_add(total, heat.clicks, heat.elements, heat.scroll, heat.folds, heat.dropped)
        _texts_add(total, heat.texts)
        for label, found in heat.samples.items() if samples else ():
            total.samples[label] = latest(total.samples.get(label, []) + found)
    for future in futures:
        for r in future.result():
            body = orjson.loads(r["counts"])
            _light_add(
                total,
                body["clicks"],
                body["elements"],
                dict(body["scroll"]),
                dict(body["folds"]),
                body["dropped"],
            )
            _texts_add(total, body.get("texts", {}))  # none in rows sealed before texts
            cells.append(_pairs(r["cells"]).astype(np.int64))
            if samples:
                for label, found in orjson.loads(r["samples"] or "{}").items():
                    total.samples[label] = latest(total.samples.get(label, []) + found)
    joined = np.concatenate(cells) if cells else np.zeros((0, 2), np.int64)
    sums = np.bincount(joined[:, 0], weights=joined[:, 1], minlength=GRID_COLUMNS * MAX_ROWS)
    hot = np.flatnonzero(sums)
    total.cells = Counter(dict(zip(hot.tolist(), sums[hot].astype(np.int64).tolist(), strict=True)))
    return trimmed(total)


def _light_add(
    total: Heat,
    clicks: int,
    elements: dict[str, list[int]],
    scroll: dict[int, int],
    folds: dict[int, int],
    dropped: int,
) -> None:
    total.clicks += clicks
    for label, counts in elements.items():
        held = total.elements.setdefault(label, [0, 0, 0])
        for i, n in enumerate(counts):
            held[i] += n
    total.scroll.update(scroll)
    total.folds.update(folds)
    total.dropped += dropped


def _texts_add(total: Heat, texts: dict[str, str]) -> None:
    for label, text in texts.items():
        text_merge(total.texts, label, text)


def layout_elements(
    *, site_id: uuid.UUID, buckets: list[tuple[str, datetime]], page: str, vp: str
) -> list[dict[str, list[int]]]:
    """Each bucket's element counts ([clicks, rage, dead]) of one layout of a page."""
    statement = prepare(bucket_heatmaps.SELECT_LAYOUT)
    db = cassandra_session()
    futures = [db.execute_async(statement, (site_id, g, b, page, vp)) for g, b in buckets]
    found = []
    for future in futures:
        row = future.result().one()
        found.append(orjson.loads(row["counts"])["elements"] if row else {})
    return found
