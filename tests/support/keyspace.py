"""The test keyspace: its tables, and the guard that keeps every CQL statement a test sends
in test_* (or system*)."""

from __future__ import annotations

import re

_KEYSPACE_IN_CQL = re.compile(
    r"\b(?:FROM|INTO|UPDATE|TABLE|KEYSPACE|INDEX\s+ON|TRUNCATE)\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?"
    r'"?([A-Za-z_][A-Za-z0-9_]*)"?\.',
    re.IGNORECASE,
)


class KeyspaceGuardViolation(AssertionError):
    """A test issued CQL against a keyspace that is neither test_ nor system."""


def guard_statement(query: object) -> None:
    """Raise if a statement names or routes to a keyspace outside test_*/system*."""
    names = set()
    keyspace = getattr(query, "keyspace", None)
    if keyspace:
        names.add(keyspace)
    text = getattr(query, "query_string", None) or getattr(
        getattr(query, "prepared_statement", None), "query_string", ""
    )
    names.update(_KEYSPACE_IN_CQL.findall(text or ""))
    for name in names:
        if not (name.startswith("test_") or name.startswith("system")):
            raise KeyspaceGuardViolation(
                f"test touched keyspace {name!r}; only test_* keyspaces are allowed"
            )


def tables() -> list[str]:
    """Every table of the test keyspace, by name, from the schema."""
    from sessions_app.foundation.core.cql import cassandra_session, keyspace

    rows = cassandra_session().execute(
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (keyspace(),)
    )
    return sorted(r["table_name"] for r in rows)
