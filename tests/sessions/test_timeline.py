"""Materialized timelines: a closed session is served from its stored copy while current;
an open one from its materialized prefix and the rows after it."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app import tasks
from sessions_app.domain.erasure import erasures
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ledger import policies, sites
from sessions_app.domain.sessions import timeline
from sessions_app.foundation.core import bounds, eventdoc
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.ids import time_uuid
from sessions_app.foundation.core.jsonfmt import dumps
from sessions_app.foundation.tables import retention_specs, user_sessions
from sessions_app.foundation.tables import session_events as session_events_table
from tests.support.accounts import member
from tests.support.events import event
from tests.support.sessions import record_session, stored_events, timeline_get

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

EVENTS = 40


@pytest.fixture(autouse=True)
def _no_margin(settings):
    """Nothing is in flight in these tests: a session may be materialized right away."""
    settings.TIMELINE_MATERIALIZE_MARGIN = timedelta(0)


def _in_flight(
    session_id: uuid.UUID, site_id: uuid.UUID, user_key: str, ts: datetime, read_began_us: int
) -> tuple:
    """The row of a page view written by a client whose clock stamped it before a read began."""
    event_id = time_uuid(ts, "in-flight")
    doc = dumps(
        {
            "event_id": event_id,
            "site_id": site_id,
            "user_key": user_key,
            "type": "pageview",
            "ts": ts,
        }
    )
    return (session_id, event_id, site_id, user_key, ts, doc, read_began_us - 1000)


@pytest.fixture
def closed(site):
    """A session that ended two hours ago (recorded just now)."""
    start = timezone.now().replace(microsecond=0) - timedelta(hours=2)
    record_session(site, start, "closed", EVENTS)
    [summary] = user_sessions.session_list(site_id=site.id, user_key="closed")
    return summary["session_id"], start


def test_a_closed_session_is_served_from_its_copy_with_the_same_body(client, site, closed, token):
    session_id, _ = closed
    first = timeline_get(client, site, session_id, token)
    assert first.status_code == 200 and first["X-Timeline-Source"] == "rows"
    second = timeline_get(client, site, session_id, token)
    assert second.status_code == 200 and second["X-Timeline-Source"] == "materialized"
    assert second.content == first.content
    body = orjson.loads(second.content)
    assert len(body["events"]) == EVENTS and body["session"]["event_count"] == EVENTS
    assert [e["event_id"] for e in body["events"]] == sorted(
        (e["event_id"] for e in body["events"]), key=lambda i: uuid.UUID(i).time
    )


def test_a_late_event_makes_the_next_read_rebuild_it(client, site, closed, token):
    session_id, start = closed
    timeline_get(client, site, session_id, token)
    assert timeline_get(client, site, session_id, token)["X-Timeline-Source"] == "materialized"
    # A late event inside the session's span lands in the same session.
    record_session(site, start + timedelta(seconds=5), "closed", 1, prefix="late")
    rebuilt = timeline_get(client, site, session_id, token)
    assert rebuilt["X-Timeline-Source"] == "rows"
    assert len(orjson.loads(rebuilt.content)["events"]) == EVENTS + 1
    again = timeline_get(client, site, session_id, token)
    assert again["X-Timeline-Source"] == "materialized" and again.content == rebuilt.content


def test_a_write_in_flight_during_the_build_still_invalidates_the_copy(
    client, site, closed, token, settings
):
    """A write stamped before the read began, landing after it, is newer than the copy."""
    session_id, start = closed
    settings.TIMELINE_MATERIALIZE_MARGIN = timedelta(seconds=1)
    time.sleep(1.1)  # the session's last write is now older than the margin
    read_began_us = time.time_ns() // 1000
    assert timeline_get(client, site, session_id, token)["X-Timeline-Source"] == "rows"
    state = timeline.timeline_state(session_id=session_id)
    assert state is not None and state.current
    # Stamped (by its client) just before that read began, but landing after it.
    cassandra_session().execute(
        prepare(
            "INSERT INTO {ks}.session_events (session_id, event_id, site_id, user_key, ts, doc,"
            " touched) VALUES (?, ?, ?, ?, ?, ?, true) USING TIMESTAMP ?"
        ),
        _in_flight(session_id, site.id, "closed", start + timedelta(seconds=1), read_began_us),
    )
    after = timeline_get(client, site, session_id, token)
    assert after["X-Timeline-Source"] == "rows"
    assert len(orjson.loads(after.content)["events"]) == EVENTS + 1


def test_an_open_session_is_never_stored_whole(client, site, token):
    record_session(site, timezone.now() - timedelta(minutes=5), "open", 5)
    [summary] = user_sessions.session_list(site_id=site.id, user_key="open")
    for _ in range(2):  # 5 events: fewer than TIMELINE_PREFIX_MIN_EVENTS, no prefix either
        assert (
            timeline_get(client, site, summary["session_id"], token)["X-Timeline-Source"] == "rows"
        )
    state = timeline.timeline_state(session_id=summary["session_id"])
    assert state is not None and state.body is None and state.prefix is None


def _from_rows(client, site, session_id, token, settings) -> bytes:
    """The timeline as built from the session's rows alone."""
    settings.TIMELINE_MATERIALIZE = False
    try:
        response = timeline_get(client, site, session_id, token)
        assert response["X-Timeline-Source"] == "rows"
        return response.content
    finally:
        settings.TIMELINE_MATERIALIZE = True


@pytest.fixture
def live(site, settings):
    """An open session: 30 events 20-15 minutes ago (sent late), and 2 sent as they happen."""
    settings.TIMELINE_PREFIX_MIN_EVENTS = 10
    start = timezone.now() - timedelta(minutes=20)
    record_session(site, start, "live", 30)
    record_session(site, timezone.now() - timedelta(seconds=5), "live", 2, prefix="now", step=1)
    [summary] = user_sessions.session_list(site_id=site.id, user_key="live")
    assert summary["event_count"] == 32
    return summary["session_id"], start


def test_an_open_session_is_served_from_its_prefix_and_the_rows_after_it(
    client, site, live, token, settings
):
    session_id, _ = live
    first = timeline_get(client, site, session_id, token)
    assert first["X-Timeline-Source"] == "rows"
    state = timeline.timeline_state(session_id=session_id)
    assert state is not None and state.prefix is not None and state.prefix_current
    assert state.prefix.count == 30 and state.body is None  # the 2 recent ones are not aged
    second = timeline_get(client, site, session_id, token)
    assert second["X-Timeline-Source"] == "prefix" and second.content == first.content

    # The session goes on: the new event is a row after the prefix; the summary is current.
    record_session(site, timezone.now(), "live", 1, prefix="next")
    third = timeline_get(client, site, session_id, token)
    assert third["X-Timeline-Source"] == "prefix"
    body = orjson.loads(third.content)
    assert len(body["events"]) == 33 and body["session"]["event_count"] == 33
    assert third.content == _from_rows(client, site, session_id, token, settings)

    other = sites.site_create(name="Other", origins=[])
    member(User.objects.get(username="api-user"), other)  # it sees both sites
    assert timeline_get(client, other, session_id, token).status_code == 404


def test_an_event_inserted_inside_the_prefix_invalidates_it(client, site, live, token, settings):
    session_id, start = live
    timeline_get(client, site, session_id, token)
    assert timeline_get(client, site, session_id, token)["X-Timeline-Source"] == "prefix"
    # A late event between the prefix's first two: sent long after it happened.
    record_session(site, start + timedelta(seconds=5), "live", 1, prefix="late")
    state = timeline.timeline_state(session_id=session_id)
    assert state is not None and not state.prefix_current
    rebuilt = timeline_get(client, site, session_id, token)
    assert rebuilt["X-Timeline-Source"] == "rows"
    assert len(orjson.loads(rebuilt.content)["events"]) == 33
    again = timeline_get(client, site, session_id, token)  # rebuilt with the late event
    assert again["X-Timeline-Source"] == "prefix" and again.content == rebuilt.content


def test_only_events_older_than_half_the_lag_when_sent_mark_the_partition(site):
    record_session(site, timezone.now() - timedelta(seconds=30), "fresh", 3)
    [fresh] = user_sessions.session_list(site_id=site.id, user_key="fresh")
    state = timeline.timeline_state(session_id=fresh["session_id"])
    assert state is not None and state.backfilled_us is None  # 30 s < 120 s / 2
    record_session(site, timezone.now() - timedelta(seconds=90), "old", 1, prefix="o")
    [old] = user_sessions.session_list(site_id=site.id, user_key="old")
    state = timeline.timeline_state(session_id=old["session_id"])
    assert state is not None and state.backfilled_us is not None


def test_a_backfilled_write_in_flight_during_the_build_invalidates_the_prefix(
    client, site, live, token, settings
):
    session_id, start = live
    settings.TIMELINE_MATERIALIZE_MARGIN = timedelta(seconds=1)
    time.sleep(1.1)  # the session's last write is now older than the margin
    read_began_us = time.time_ns() // 1000
    assert timeline_get(client, site, session_id, token)["X-Timeline-Source"] == "rows"
    assert timeline.timeline_state(session_id=session_id).prefix_current
    # An old event (so marked by its writer), stamped before that read began, landing after.
    cassandra_session().execute(
        prepare(
            "INSERT INTO {ks}.session_events (session_id, event_id, site_id, user_key, ts, doc,"
            " touched, backfilled) VALUES (?, ?, ?, ?, ?, ?, true, true) USING TIMESTAMP ?"
        ),
        _in_flight(session_id, site.id, "live", start + timedelta(seconds=1), read_began_us),
    )
    after = timeline_get(client, site, session_id, token)
    assert after["X-Timeline-Source"] == "rows"
    assert len(orjson.loads(after.content)["events"]) == 33


def test_the_prefix_grows_as_events_age_past_the_lag(client, site, live, token, settings):
    session_id, _ = live
    timeline_get(client, site, session_id, token)
    assert timeline.timeline_state(session_id=session_id).prefix.count == 30
    settings.TIMELINE_PREFIX_LAG = timedelta(seconds=2)  # writers mark events older than 1 s
    record_session(site, timezone.now(), "live", 12, prefix="burst", step=0.01)
    # The 2 + 12 recent events are then older than the lag: the burst's last is 0.11 s
    # after its first (2.1 s failed whenever recording the burst took under 10 ms).
    time.sleep(2.3)
    grown = timeline_get(client, site, session_id, token)
    assert grown["X-Timeline-Source"] == "prefix"
    state = timeline.timeline_state(session_id=session_id)
    assert state.prefix_current and state.prefix.count == 44
    again = timeline_get(client, site, session_id, token)
    assert again["X-Timeline-Source"] == "prefix" and again.content == grown.content
    assert grown.content == _from_rows(client, site, session_id, token, settings)


def test_a_prefix_holding_the_first_1000_events_is_the_whole_page(client, site, token, settings):
    settings.TIMELINE_PREFIX_MIN_EVENTS = 10
    start = timezone.now() - timedelta(minutes=20)
    for offset in range(0, 1005, 335):  # batches of at most COLLECT_MAX_EVENTS
        record_session(
            site, start + timedelta(seconds=offset), "long", 335, prefix=f"b{offset}-", step=1
        )
    [summary] = user_sessions.session_list(site_id=site.id, user_key="long")
    session_id = summary["session_id"]
    first = timeline_get(client, site, session_id, token)
    assert first["X-Timeline-Source"] == "rows"
    assert timeline.timeline_state(session_id=session_id).prefix.count == bounds.MAX_PAGE
    second = timeline_get(client, site, session_id, token)
    assert second["X-Timeline-Source"] == "prefix" and second.content == first.content
    assert len(orjson.loads(second.content)["events"]) == bounds.MAX_PAGE


def test_materializing_can_be_turned_off(client, site, closed, token, settings):
    from sessions_app.features.web.renderers import dumps

    settings.TIMELINE_MATERIALIZE = False
    session_id, _ = closed
    # The rows path: every event and the summary (read at once, the user key from the probe).
    expected = {
        "session": user_sessions.session_summary(
            site_id=site.id, user_key="closed", session_id=session_id
        ),
        "events": stored_events(session_id=session_id),
    }
    assert len(expected["events"]) == EVENTS and expected["session"] is not None
    for _ in range(2):
        response = timeline_get(client, site, session_id, token)
        assert response["X-Timeline-Source"] == "rows"
        assert orjson.loads(response.content) == orjson.loads(dumps(expected))


def test_another_sites_id_gets_404_even_when_materialized(client, site, closed, token):
    session_id, _ = closed
    timeline_get(client, site, session_id, token)
    assert timeline_get(client, site, session_id, token)["X-Timeline-Source"] == "materialized"
    other = sites.site_create(name="Other", origins=[])
    member(User.objects.get(username="api-user"), other)  # it sees both sites
    response = timeline_get(client, other, session_id, token)
    assert response.status_code == 404 and response.json()["field"] == "path"


def test_the_copy_lives_no_longer_than_the_sessions_events(client, site, closed, token):
    session_id, start = closed
    timeline_get(client, site, session_id, token)
    [row] = cassandra_session().execute(
        prepare(
            "SELECT ttl(timeline) AS ttl, ttl(touched) AS last FROM {ks}.session_events"
            " WHERE session_id = ? LIMIT 1"
        ),
        (session_id,),
    )
    age = (timezone.now() - start).total_seconds()
    limit = policies.ttl_seconds(retention_specs.RAW_EVENTS) - age
    assert 0 < row["ttl"] <= min(row["last"], limit)
    assert row["ttl"] >= limit - 60  # and not much shorter: a cache that keeps missing is useless


def test_erasing_the_user_deletes_the_copy(client, site, closed, token, settings):
    settings.SUPPRESSION_CACHE_SECONDS = 0
    settings.ERASURE_SETTLE_SECONDS = 0
    session_id, _ = closed
    timeline_get(client, site, session_id, token)
    assert timeline_get(client, site, session_id, token)["X-Timeline-Source"] == "materialized"
    root = User.objects.create_superuser("root", password="pw-root-123")
    request = erasures.erasure_request(
        site=site, key="closed", kind="anonymous_id", requested_by=root
    )
    tasks.erase_user.apply(args=[str(request.pk)]).get()
    assert timeline.timeline_state(session_id=session_id) is None
    assert timeline_get(client, site, session_id, token).status_code == 404


def _docs(session_id: uuid.UUID) -> list[dict]:
    rows = cassandra_session().execute(
        prepare("SELECT doc FROM {ks}.session_events WHERE session_id = ?"),
        (session_id,),
    )
    return list(rows)


def test_an_event_is_stored_as_its_api_json_and_the_timeline_serves_those_bytes(
    client, site, token, settings
):
    settings.TIMELINE_MATERIALIZE = False
    start = timezone.now().replace(microsecond=0) - timedelta(hours=2)
    events_record(
        source=Source(site=site, received_at=timezone.now()),
        raw_events=[
            event(start, anon="docs", id="d0", title="Café \u2028 «ünï»"),
            event(
                start + timedelta(milliseconds=1500, microseconds=700),
                anon="docs",
                id="d1",
                type="click",
                element={"tag": "a", "text": 'He said "ts":"x" — ok'},
                props={"plan": "pro", "seats": 3, "ratio": 0.25},
            ),
        ],
    )
    [summary] = user_sessions.session_list(site_id=site.id, user_key="docs")
    session_id = summary["session_id"]
    rows = _docs(session_id)
    assert all(r["doc"] for r in rows)
    docs = [orjson.loads(r["doc"]) for r in rows]
    assert [list(d) for d in docs] == [list(eventdoc.EVENT_FIELDS)] * 2
    # Floored to the millisecond, as the timestamp column keeps it.
    assert datetime.fromisoformat(docs[1]["ts"]) == start + timedelta(milliseconds=1500)
    assert eventdoc.doc_time(rows[1]["doc"]) == start + timedelta(milliseconds=1500)
    assert docs[1]["element"]["text"] == 'He said "ts":"x" — ok' and docs[1]["props"]["seats"] == 3

    response = timeline_get(client, site, session_id, token)
    assert response["X-Timeline-Source"] == "rows"
    assert response.content.endswith(b'"events":[' + b",".join(r["doc"] for r in rows) + b"]}")


def test_a_documents_time_is_its_ts_key_whatever_its_strings_hold():
    from sessions_app.features.web.renderers import dumps

    tricky = '"ts":"2000-01-01T00:00:00Z"'
    for ts in (
        datetime(2026, 11, 24, 9, 30, tzinfo=UTC),
        datetime(2026, 11, 24, 9, 30, 1, 5000, tzinfo=UTC),
    ):
        doc = dumps(
            {"event_id": uuid.uuid1(), "user_key": tricky, "name": tricky, "ts": ts, "url": tricky}
        )
        assert eventdoc.doc_time(doc) == ts


def test_a_documents_time_is_floored_to_the_millisecond_the_column_keeps():
    from sessions_app.domain.ingest.plan import EventRow
    from sessions_app.domain.ingest.rows import event_doc

    ts = datetime(2026, 11, 24, 9, 30, 1, 123_999, tzinfo=UTC)  # e.g. a clamped receipt time
    row = EventRow(
        site_id=uuid.uuid4(),
        user_key="u",
        session_id=uuid.uuid1(),
        event_id=uuid.uuid1(),
        type="click",
        ts=ts,
        element={"tag": "a"},
    )
    doc = event_doc(row, ts, '{"tag":"a"}', None)
    assert eventdoc.doc_time(doc) == ts.replace(microsecond=123_000)
    assert eventdoc.event_from_doc(doc)["element"] == {"tag": "a"}


def test_the_page_the_api_and_the_export_show_the_one_timeline(
    client, analyst, site, closed, token
):
    """All three read sessions.timeline: a stored copy shortened to three events is what
    each of them shows (reading the rows would show all forty)."""
    session_id, _ = closed
    assert timeline_get(client, site, session_id, token)["X-Timeline-Source"] == "rows"
    body = orjson.loads(timeline_get(client, site, session_id, token).content)
    short = dumps({"session": body["session"], "events": body["events"][:3]})
    cassandra_session().execute(
        prepare(session_events_table.STORE_TIMELINE),
        (time.time_ns() // 1000, 3600, short, site.id, session_id),
    )
    api = timeline_get(client, site, session_id, token)
    assert api["X-Timeline-Source"] == "materialized" and api.content == short
    export = client.get(
        f"/api/sites/{site.id}/sessions/{session_id}/export",
        {"format": "json"},
        HTTP_AUTHORIZATION=f"Token {token}",
    ).json()
    assert [e["event_id"] for e in export] == [e["event_id"] for e in body["events"][:3]]
    page = client.get(f"/sites/{site.id}/sessions/{session_id}/")
    assert page.status_code == 200 and page.context["count"] == 3
    assert page.context["summary"]["event_count"] == EVENTS
