"""Each table module names its write's parameters beside the statement, in its order."""

from __future__ import annotations

import re

import pytest

from sessions_app.foundation import dimensions
from sessions_app.foundation.tables import (
    anonymous_links,
    bucket_partials,
    failed_events,
    identity_links,
    ingest_stats,
    latest_sessions,
    session_events,
    site_events_by_bucket,
    site_sessions,
    transaction_log,
    user_events_by_bucket,
    user_properties,
    user_sessions,
)


def placeholders(statement: str) -> list[str]:
    """The name of each `?` of an INSERT or UPDATE, in order: its column, or timestamp/ttl."""
    text = " ".join(statement.split())
    update = re.match(r"UPDATE \S+ (?:USING (.*?) )?SET (.*)", text)
    if update:
        using = [n.lower() for n in re.findall(r"(TIMESTAMP|TTL) \?", update.group(1) or "")]
        return using + re.findall(r"(\w+) = (?:\w+ \+ )?\?", update.group(2))
    insert = re.match(r"INSERT INTO \S+ \(([^)]*)\) VALUES \(([^)]*)\)(.*)", text)
    assert insert, statement
    columns = [c.strip() for c in insert.group(1).split(",")]
    values = [v.strip() for v in insert.group(2).split(",")]
    names = [c for c, v in zip(columns, values, strict=True) if v == "?"]
    return names + [n.lower() for n in re.findall(r"(TIMESTAMP|TTL) \?", insert.group(3))]


@pytest.mark.parametrize(
    ("statement", "row"),
    [
        (session_events.INSERT, session_events.Row),
        (session_events.INSERT_BACKFILLED, session_events.Row),
        (user_events_by_bucket.INSERT, user_events_by_bucket.Row),
        (site_events_by_bucket.INSERT, site_events_by_bucket.Row),
        (latest_sessions.INSERT, latest_sessions.Row),
        (identity_links.INSERT, identity_links.Row),
        (anonymous_links.INSERT, anonymous_links.Row),
        (bucket_partials.INSERT, bucket_partials.Row),
        (user_properties.SET_VALUE, user_properties.SetValue),
        (user_properties.SET_FIRST, user_properties.SetFirst),
        (transaction_log.INSERT, transaction_log.Row),
        (transaction_log.MARK_APPLIED, transaction_log.Mark),
        (failed_events.INSERT, failed_events.Row),
        (ingest_stats.INSERT, ingest_stats.Row),
    ],
)
def test_a_row_names_its_statement_s_parameters_in_their_order(statement, row) -> None:
    assert list(row._fields) == placeholders(statement)


@pytest.mark.parametrize(
    ("table", "stored"),
    [(user_sessions, dimensions.enriched), (site_sessions, dimensions.explored)],
)
def test_the_session_s_parameters_follow_their_statement_dimensions_by_name(table, stored) -> None:
    names = placeholders(table.with_dimensions(table.UPSERT))
    columns = {d.column: d.name for d in stored()}
    given = {name: f"<{name}>" for name in names if name not in columns}
    by_name = {columns[name]: f"<{name}>" for name in names if name in columns}
    assert len(by_name) == len(columns)
    params = table.upsert_params(**given, dimensions=by_name)
    assert list(params) == [f"<{name}>" for name in names]


def test_the_placeholders_are_read_as_written() -> None:
    upsert = site_sessions.with_dimensions(site_sessions.UPSERT)
    assert placeholders(upsert)[:3] == ["timestamp", "ttl", "user_key"]
    assert placeholders(upsert)[-7:] == [
        "pages",
        "events",
        "terms",
        "site_id",
        "day",
        "shard",
        "session_id",
    ]
    assert placeholders(session_events.INSERT_BACKFILLED)[-2:] == ["doc", "ttl"]
    assert placeholders(transaction_log.MARK_APPLIED)[:2] == ["ttl", "site_id"]
