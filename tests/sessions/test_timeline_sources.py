"""One contract for the three sources a timeline is served from: the session's rows, a
materialized prefix and the rows after it, or the stored copy of a closed session."""

from __future__ import annotations

from datetime import timedelta

import orjson
import pytest
from django.utils import timezone

from sessions_app.domain.ledger import sites
from sessions_app.domain.sessions import timeline
from sessions_app.foundation.core.jsonfmt import dumps
from sessions_app.foundation.tables import user_sessions
from tests.support.sessions import record_session, stored_events, timeline_get

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


class TimelineSourceContract:
    """The contract; each subclass records a session and reads it until it comes from
    its source."""

    source: str

    def served(self, client, site, token, settings):
        raise NotImplementedError

    def test_the_body_is_the_summary_and_every_stored_event_in_order(
        self, client, site, token, settings
    ):
        settings.TIMELINE_MATERIALIZE_MARGIN = timedelta(0)
        session_id, response = self.served(client, site, token, settings)
        assert response.status_code == 200
        assert response["X-Timeline-Source"] == self.source
        body = orjson.loads(response.content)
        stored = stored_events(session_id=session_id)
        assert body["events"] == [orjson.loads(dumps(e)) for e in stored]
        user_key = stored[0]["user_key"]
        summary = user_sessions.session_summary(
            site_id=site.id, user_key=user_key, session_id=session_id
        )
        assert body["session"] == orjson.loads(dumps(summary))
        assert body["session"]["event_count"] == len(stored)

    def test_another_site_never_gets_it(self, client, site, token, settings):
        settings.TIMELINE_MATERIALIZE_MARGIN = timedelta(0)
        session_id, _ = self.served(client, site, token, settings)
        other = sites.site_create(name="Other", origins=["https://other.example"])
        assert timeline.session_timeline(site_id=other.id, session_id=session_id) is None


class TestServedFromRows(TimelineSourceContract):
    source = "rows"

    def served(self, client, site, token, settings):
        settings.TIMELINE_MATERIALIZE = False
        start = timezone.now().replace(microsecond=0) - timedelta(hours=2)
        record_session(site, start, "rows", 12)
        [summary] = user_sessions.session_list(site_id=site.id, user_key="rows")
        timeline_get(client, site, summary["session_id"], token)
        return summary["session_id"], timeline_get(client, site, summary["session_id"], token)


class TestServedFromPrefix(TimelineSourceContract):
    source = "prefix"

    def served(self, client, site, token, settings):
        settings.TIMELINE_PREFIX_MIN_EVENTS = 10
        record_session(site, timezone.now() - timedelta(minutes=20), "open", 30)
        recent = timezone.now() - timedelta(seconds=5)
        record_session(site, recent, "open", 2, prefix="now", step=1)
        [summary] = user_sessions.session_list(site_id=site.id, user_key="open")
        assert timeline_get(client, site, summary["session_id"], token)["X-Timeline-Source"] == (
            "rows"
        )
        return summary["session_id"], timeline_get(client, site, summary["session_id"], token)


class TestServedFromTheStoredCopy(TimelineSourceContract):
    source = "materialized"

    def served(self, client, site, token, settings):
        start = timezone.now().replace(microsecond=0) - timedelta(hours=2)
        record_session(site, start, "closed", 12)
        [summary] = user_sessions.session_list(site_id=site.id, user_key="closed")
        assert timeline_get(client, site, summary["session_id"], token)["X-Timeline-Source"] == (
            "rows"
        )
        return summary["session_id"], timeline_get(client, site, summary["session_id"], token)
