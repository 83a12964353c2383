"""The visitor: who sent a request (its address, anonymised before storage) and what the
collector derives of it (domain/ingest/enrich.py), stamped on a session when it starts.

A request's visitor, or one SDK event's own (Segment's context), is a `Visit`; only the
country and the /24 (/48) prefix of the address are kept, and of the user agent only
what enrich.agent derives (the string itself is not stored).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from sessions_app.domain.ingest import enrich
from sessions_app.domain.ingest.enrich import NO_AGENT, Agent, is_bot_agent
from sessions_app.domain.ingest.state import SessionState
from sessions_app.foundation.dimensions import AGENT, VISITOR, by_derivation


@dataclass(frozen=True)
class Visit:
    """What the collector knows about the visitor beyond each event."""

    ip_prefix: str | None
    is_bot: bool
    agent: Agent = NO_AGENT
    country: str | None = None
    language: str | None = None

    def stamp(self, state: SessionState) -> None:
        """Describe the session's visitor: the agent's, and the country and language
        unless the session has them."""
        known = state.dimensions
        for d in by_derivation(AGENT):
            known[d.name] = getattr(self.agent, d.derived[1])
        for d in by_derivation(VISITOR):
            known[d.name] = known.get(d.name) or getattr(self, d.derived[1])

    @staticmethod
    def stamped(state: SessionState) -> bool:
        """Whether a visitor's agent described the session (else it is new, or began
        with a server-side event)."""
        return any(state.dimensions.get(d.name) for d in by_derivation(AGENT))


def visit_of(*, user_agent: str | None, ip: str | None, accept_language: str | None) -> Visit:
    """The visitor of a request, enriched: the country is looked up before the IP is
    anonymised."""
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


def anonymize_ip(address: str | None) -> str | None:
    """Return the address with its host part zeroed: IPv4 /24, IPv6 /48 (last 80 bits)."""
    if not address:
        return None
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    prefix = 24 if ip.version == 4 else 48
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False).network_address)


def client_ip(meta: Mapping[str, Any], *, trusted_proxies: int) -> str | None:
    """Return the client address, trusting X-Forwarded-For only for known proxy hops."""
    if trusted_proxies > 0:
        hops = [h.strip() for h in str(meta.get("HTTP_X_FORWARDED_FOR", "")).split(",") if h]
        if len(hops) >= trusted_proxies:
            return hops[-trusted_proxies]
    address = meta.get("REMOTE_ADDR")
    return str(address) if address else None
