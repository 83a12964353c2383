"""cassandra.bind serializes every write exactly as the driver's own bind does."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from cassandra.query import UNSET_VALUE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessions_app.foundation.core.cql import bind, prepare
from sessions_app.foundation.tables import identity_links
from sessions_app.foundation.tables.registry import statement_text
from tests.support.hypothesis import examples

pytestmark = pytest.mark.django_db(databases=["cassandra"])

STATEMENTS = [
    "session_events.INSERT",
    "session_events.INSERT_BACKFILLED",
    "user_events_by_bucket.INSERT",
    "site_events_by_bucket.INSERT",
    "user_sessions.UPSERT",
    "latest_sessions.INSERT",
    "identity_links.INSERT",
    "anonymous_links.INSERT",
    "user_properties.SET_VALUE",
    "user_properties.SET_FIRST",
    "transaction_log.INSERT",
    "transaction_log.MARK_APPLIED",
    "failed_events.INSERT",
    "ingest_stats.INSERT",
    "bucket_users.UPSERT",  # map<text, bigint>, as rolling_counts'
    "rolling_counts.UPSERT",
]
times = st.datetimes(
    min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
) | st.datetimes(  # an instant the driver can move to UTC (not 0001-01-01 at +02:00)
    min_value=datetime(1, 1, 2), timezones=st.sampled_from([timezone(timedelta(hours=2)), UTC])
)
VALUES = {
    "uuid": st.uuids(),
    "timeuuid": st.builds(uuid.uuid1),
    "text": st.text(max_size=40),
    "varchar": st.text(max_size=40),
    "timestamp": times | st.datetimes(),  # naive ones go through the driver's path
    "boolean": st.booleans(),
    "int": st.integers(-(2**31), 2**31 - 1),
    "smallint": st.integers(-(2**15), 2**15 - 1),
    "bigint": st.integers(-(2**63), 2**63 - 1),
    "blob": st.binary(max_size=64),
}


def _value(column, draw):
    name = column.type.typename
    if name in VALUES:
        return draw(VALUES[name])
    # map<text, int> (ingest_stats.rejected) or map<text, bigint> (the per-user counts)
    bits = 63 if column.type.subtypes[1].typename == "bigint" else 31
    counts = st.integers(-(2**bits), 2**bits - 1)
    return draw(st.dictionaries(st.text(max_size=10), counts, max_size=6))


@pytest.mark.parametrize("name", STATEMENTS)
@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_bind_writes_the_bytes_the_driver_writes(name, data):
    statement = prepare(statement_text(name), idempotent=True, write=True)
    keys = set(statement.routing_key_indexes or ())
    params = tuple(
        _value(column, data.draw)
        if i in keys or not data.draw(st.booleans(), label="null")
        else data.draw(st.sampled_from([None, {}]) if column.type.typename == "map" else st.none())
        for i, column in enumerate(statement.column_metadata)
    )
    expected = statement.bind(tuple(UNSET_VALUE if v is None or v == {} else v for v in params))

    bound = bind(statement, params)

    assert bound.values == expected.values
    assert bound.routing_key == expected.routing_key
    assert bound.consistency_level == statement.consistency_level and bound.is_idempotent


def test_a_missing_partition_key_value_or_a_wrong_type_is_refused():
    statement = prepare(identity_links.INSERT, idempotent=True, write=True)
    with pytest.raises(ValueError, match="partition key"):
        bind(statement, (None, "user", "anon", datetime.now(UTC), 60))
    with pytest.raises(TypeError):
        bind(statement, (uuid.uuid4(), "user", "anon", "not a time", 60))
    with pytest.raises(ValueError, match="values for"):
        bind(statement, (uuid.uuid4(), "user"))


@pytest.mark.parametrize("counts", [{1: 2}, {"key": 2**64}, {"key": "2"}, ["key", 2]])
def test_a_map_the_driver_refuses_is_refused_as_the_driver_does(counts):
    statement = prepare(statement_text("bucket_users.UPSERT"), idempotent=True, write=True)
    params = (uuid.uuid4(), "hour", datetime.now(UTC), "user", counts, 60)
    column = statement.column_metadata[4].type  # counts: the driver's own serializer
    with pytest.raises(Exception) as driver:
        column.serialize(counts, statement.protocol_version)
    with pytest.raises(driver.type, match=re.escape(str(driver.value))):
        bind(statement, params)
