"""Brute force for the erasure tests: every row of every table of the keyspace that mentions
a string anywhere — in any column, inside JSON, maps, sets and zlib- or gzip-compressed
blobs (the transaction log's plans, the replay chunks). Reads whole tables (tests only:
the test keyspace is small).

A read returns every live cell whatever its write timestamp, so a cell stamped in the
future (which a delete at the present does not shadow) is found like any other;
`stamped_after` finds such cells by their write times."""

from __future__ import annotations

import contextlib
import zlib
from collections import Counter
from typing import Any

from cassandra.query import SimpleStatement

from sessions_app.foundation.core.cql import cassandra_session, keyspace
from tests.support.keyspace import tables


def _texts(value: Any) -> list[str]:
    if isinstance(value, bytes | bytearray):
        raw = bytes(value)
        with contextlib.suppress(zlib.error):
            raw += zlib.decompress(raw, 47)  # zlib or gzip, by its header
        return [raw.decode("utf-8", "replace")]
    return [repr(value)]


def rows_mentioning(*needles: str) -> Counter[str]:
    """How many rows of each table contain any of the needles."""
    found: Counter[str] = Counter()
    session = cassandra_session()
    for table in tables():
        # Table names come from the schema, not from input.
        statement = SimpleStatement(f"SELECT * FROM {keyspace()}.{table}", fetch_size=5000)
        for row in session.execute(statement, timeout=120):
            text = " ".join(t for v in row.values() for t in _texts(v))
            if any(n in text for n in needles):
                found[table] += 1
    return found


def _columns(table: str) -> dict[str, str]:
    rows = cassandra_session().execute(
        "SELECT column_name, kind FROM system_schema.columns "
        "WHERE keyspace_name = %s AND table_name = %s",
        (keyspace(), table),
    )
    return {r["column_name"]: r["kind"] for r in rows}


def _latest(stamp: Any) -> int:
    if isinstance(stamp, list | tuple):  # a collection's cells
        return max((s for s in stamp if s is not None), default=0)
    return stamp or 0


def stamped_after(bound_us: int, needle: str) -> Counter[str]:
    """How many cells of each table, in rows that mention the needle, are stamped later
    than bound_us (µs since the epoch)."""
    found: Counter[str] = Counter()
    session = cassandra_session()
    for table in tables():
        columns = _columns(table)
        stamped = sorted(n for n, kind in columns.items() if kind in ("regular", "static"))
        if not stamped:
            continue
        # Names come from the schema, not from input.
        selected = [f'"{n}"' for n in sorted(columns)]
        selected += [f'writetime("{n}") AS "w:{n}"' for n in stamped]
        statement = SimpleStatement(
            f"SELECT {', '.join(selected)} FROM {keyspace()}.{table}", fetch_size=5000
        )
        for row in session.execute(statement, timeout=120):
            text = " ".join(t for n in columns for t in _texts(row[n]))
            if needle in text:
                found[table] += sum(_latest(row[f"w:{n}"]) > bound_us for n in stamped)
    return +found
