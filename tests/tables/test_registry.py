"""The table registry covers every table, and every table's CQL lives in its own module."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from sessions_app.domain.erasure.job import _Job
from sessions_app.domain.jobs.purge import PURGE_TARGETS, USER_BUCKETS
from sessions_app.domain.partitions import probes
from sessions_app.foundation.core.cql import cassandra_session, keyspace, prepare
from sessions_app.foundation.tables import registry, retention_specs
from sessions_app.foundation.tables.spec import RESEAL, Keys

PACKAGE = Path(__file__).resolve().parents[2] / "sessions_app"
TABLES_DIR = PACKAGE / "foundation" / "tables"
USER_COLUMNS = {"user_key", "user_id", "anonymous_id"}
TABLE_NAMES = """
SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?
"""


@pytest.mark.django_db(databases=["default", "cassandra"])
def test_every_table_of_the_keyspace_has_a_spec_and_every_spec_a_table():
    rows = cassandra_session().execute(prepare(TABLE_NAMES), (keyspace(),))
    assert {row["table_name"] for row in rows} == set(registry.BY_NAME)


def test_a_spec_names_its_table_once():
    names = [spec.name for spec in registry.TABLES]
    assert len(names) == len(set(names))


def _cql_strings(path: Path) -> list[tuple[str, str]]:
    """Return (constant name, text) of the module-level strings naming a {ks} table."""
    found = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            value = node.value.value
            if isinstance(value, str) and "{ks}." in value:
                found.append((ast.unparse(node.targets[0]), value))
    return found


def test_cql_on_a_table_is_written_only_in_that_tables_module():
    outside = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if TABLES_DIR not in path.parents and "{ks}." in path.read_text()
    ]
    assert outside == []
    for spec in registry.TABLES:
        module = TABLES_DIR / f"{spec.name}.py"
        statements = _cql_strings(module)
        assert statements, spec.name
        for name, text in statements:
            assert set(re.findall(r"\{ks\}\.(\w+)", text)) == {spec.name}, (spec.name, name)


def test_every_table_holding_a_user_key_has_an_erasure_step_the_job_runs():
    run = inspect.getsource(_Job.run)
    for spec in registry.TABLES:
        if USER_COLUMNS & set(spec.model._columns):
            assert spec.erasure, f"{spec.name} holds user keys but no erasure step"
        if spec.erasure:
            assert callable(getattr(_Job, spec.erasure, None)), spec.erasure
            assert f"self.{spec.erasure}(" in run, spec.erasure
    assert "bucket_aggregates" not in registry.erased_tables()
    assert registry.BY_NAME["bucket_aggregates"].erasure == RESEAL


def test_the_partition_report_has_a_probe_for_each_sized_table():
    for spec in registry.TABLES:
        if spec.sizing:
            assert callable(getattr(probes, spec.sizing, None)), spec.sizing
    sized = {spec.name for spec in registry.TABLES if spec.sizing}
    assert {"site_events_by_bucket", "user_events_by_bucket", "session_events"} <= sized


def test_the_purge_targets_come_from_the_specs():
    expected = set()
    for spec in registry.TABLES:
        if spec.purge is None or spec.purge.keys is Keys.USERS_FROM_COUNTS:
            continue
        if spec.purge.keys is Keys.GRANULARITIES:
            expected |= {f"{spec.name}:{g}" for g in ("hour", "day", "month")}
            if spec.purge.weeks:
                expected.add(f"{spec.name}:week")
        else:
            expected.add(spec.name)
    assert {t.name for t in PURGE_TARGETS} == expected
    assert USER_BUCKETS == "user_events_by_bucket"
    assert "user_sets:week" in expected  # the weekly cohorts' sets
    for target in PURGE_TARGETS:
        assert target.policy in retention_specs.SPECS


def test_every_policy_covers_tables_and_every_table_options_its_policies():
    for key in retention_specs.SPECS:
        assert registry.tables_of_policy(key), key
    for spec in registry.TABLES:
        options = spec.model.__options__
        if spec.policies:
            longest = max(retention_specs.SPECS[p].max_days for p in spec.policies)
            assert options["default_time_to_live"] == longest * 86_400, spec.name


def test_no_statement_allows_filtering():
    statements = [
        (spec.name, name, text)
        for spec in registry.TABLES
        for name, text in _cql_strings(TABLES_DIR / f"{spec.name}.py")
    ]
    assert len(statements) > len(registry.TABLES)
    assert [s[:2] for s in statements if "ALLOW FILTERING" in " ".join(s[2].upper().split())] == []
