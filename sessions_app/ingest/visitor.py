"""Who sent a request: client IP (anonymised before storage) and bot detection."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

# Crawlers, monitors, headless browsers and HTTP libraries announce themselves.
BOT_AGENT = re.compile(
    r"bot\b|bot/|crawl|spider|slurp|mediapartners|headless|phantomjs|puppeteer|playwright|"
    r"selenium|lighthouse|pingdom|uptime|monitor|curl/|wget/|python-requests|httpclient|"
    r"go-http-client|okhttp|scrapy|facebookexternalhit|preview",
    re.IGNORECASE,
)


def is_bot_agent(user_agent: str | None) -> bool:
    """Return True for user agents of crawlers, monitors and automation."""
    return bool(user_agent) and BOT_AGENT.search(user_agent or "") is not None


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
