"""Step enrich: who sent each event (domain/ingest/visit.py, from domain/ingest/enrich.py's
parsers).

The request's visitor once (user agent, country before the address is anonymised,
language), and an SDK event's own where its context names one (Segment's userAgent, ip,
locale beat the request's, which is the SDK's server).
"""

from __future__ import annotations

from sessions_app.domain.ingest.context import Enriched, Source
from sessions_app.domain.ingest.order import Candidate
from sessions_app.domain.ingest.visit import event_visit, visit_of


def enrich(source: Source, fresh: list[Candidate]) -> Enriched:
    """Give each fresh event its visitor."""
    visit = visit_of(
        user_agent=source.user_agent, ip=source.ip, accept_language=source.accept_language
    )
    visits = [event_visit(visit, c.event.context) if c.event.context else visit for c in fresh]
    return Enriched(visits=visits, is_bot=visit.is_bot)
