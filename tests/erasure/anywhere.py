"""Brute force for the erasure tests: every row of every table of the keyspace that mentions
a string anywhere — in any column, inside JSON, maps, sets and zlib-compressed blobs (the
transaction log's plans). Reads whole tables (tests only: the test keyspace is small)."""

from __future__ import annotations

import contextlib
import zlib
from collections import Counter
from typing import Any

from cassandra.query import SimpleStatement

from sessions_app.core.cql import cassandra_session, keyspace


def _texts(value: Any) -> list[str]:
    if isinstance(value, bytes | bytearray):
        raw = bytes(value)
        with contextlib.suppress(zlib.error):
            raw += zlib.decompress(raw)
        return [raw.decode("utf-8", "replace")]
    return [repr(value)]


def tables() -> list[str]:
    session = cassandra_session()
    rows = session.execute(
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (keyspace(),)
    )
    return sorted(r["table_name"] for r in rows)


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
