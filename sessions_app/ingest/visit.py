"""The visitor of a request, or of one SDK event, enriched (ingest/enrich.py): what the
sessionizer stamps on a session besides its events."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from sessions_app.ingest import enrich
from sessions_app.ingest.sessionizer import Visit
from sessions_app.ingest.visitor import anonymize_ip, is_bot_agent


def visit_of(*, user_agent: str | None, ip: str | None, accept_language: str | None) -> Visit:
    """The visitor of a request, enriched: the country is looked up before the IP is
    anonymised, and only the country and the /24 (/48) prefix are kept; of the user agent,
    only what enrich.agent derives (the string itself is not stored)."""
    if not settings.INGEST_ENRICHMENT:  # the collector as it was before enrichment
        return Visit(ip_prefix=anonymize_ip(ip), is_bot=is_bot_agent(user_agent))
    agent = enrich.agent((user_agent or "")[:512] or None)
    return Visit(
        ip_prefix=anonymize_ip(ip),
        is_bot=agent.device == enrich.BOT,
        agent=agent,
        country=enrich.country(ip),
        language=enrich.language(accept_language),
    )


def event_visit(visit: Visit, context: dict[str, Any]) -> Visit:
    """An SDK event's own visitor (Segment's context.userAgent, ip, locale) beats the
    request's, which is the SDK's server."""
    ua, country, locale = context.get("user_agent"), context.get("country"), context.get("locale")
    if not (ua or country or locale) or not settings.INGEST_ENRICHMENT:
        return visit
    agent = enrich.agent(ua) if ua else visit.agent
    return Visit(
        ip_prefix=context.get("ip") or visit.ip_prefix,
        is_bot=agent.device == enrich.BOT if ua else visit.is_bot,
        agent=agent,
        country=country or visit.country,
        language=enrich.language(locale) or visit.language,
    )
