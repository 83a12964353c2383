"""The suite can never touch a keyspace that does not start with test_."""

from __future__ import annotations

import pytest
from django.db import connections

from sessions_app.foundation.core.cql import KeyspaceGuardError, cassandra_session, keyspace
from tests.support.keyspace import KeyspaceGuardViolation, guard_statement

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def test_active_keyspace_is_a_test_keyspace() -> None:
    assert keyspace().startswith("test_")


def test_statement_against_the_real_keyspace_is_refused() -> None:
    with pytest.raises(KeyspaceGuardViolation, match="'clickstream'"):
        cassandra_session().execute("SELECT * FROM clickstream.user_sessions LIMIT 1")


def test_guard_reads_prepared_and_quoted_names() -> None:
    guard_statement(type("S", (), {"query_string": "SELECT * FROM test_x.t", "keyspace": None})())
    guard_statement(
        type("S", (), {"query_string": "SELECT * FROM system.local", "keyspace": None})()
    )
    with pytest.raises(KeyspaceGuardViolation):
        guard_statement(
            type(
                "S", (), {"query_string": 'INSERT INTO "prod".t (a) VALUES (1)', "keyspace": None}
            )()
        )
    with pytest.raises(KeyspaceGuardViolation):
        guard_statement(type("S", (), {"query_string": "", "keyspace": "prod"})())


def test_app_refuses_a_non_test_keyspace_in_test_settings() -> None:
    conn = connections["cassandra"]
    original = conn.settings_dict["NAME"]
    conn.settings_dict["NAME"] = "clickstream"
    try:
        with pytest.raises(KeyspaceGuardError, match="only allow keyspaces starting with 'test_'"):
            keyspace()
    finally:
        conn.settings_dict["NAME"] = original
