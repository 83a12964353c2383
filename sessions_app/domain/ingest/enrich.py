"""Enrichment at ingest: the dimensions analysts break sessions down by, derived once.

- user agent → browser + major version, OS + version, device type (desktop, mobile,
  tablet, bot): `ua-parser` with its precompiled rules (`ua-parser-builtins`, the Rust
  resolver `ua-parser-rs` when installed); bots also from `crawler-user-agents`, the
  maintained crawler list, and our own patterns for monitors and automation;
- client IP → ISO country, from `iptocc`'s offline database (inside the wheel; no download
  at run time), looked up before the address is anonymised: only the country is kept;
- landing URL, referrer and Segment's context.campaign → source, medium, campaign, term,
  content: UTM parameters first, then click ids (gclid, msclkid, fbclid), then the
  referrer's host against the table below (search engines, social networks, email);
- language: the first Accept-Language tag, or the SDK's context.locale.

Parsers are cached per distinct input (`functools.lru_cache`, AGENT_CACHE user agents),
so a busy collector parses each browser build once per process.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import crawleruseragents
import iptocc
import ua_parser

from sessions_app.foundation import sources

AGENT_CACHE = 8192
UNKNOWN = None  # a dimension nothing could be derived for: stored as null

DESKTOP, MOBILE, TABLET, BOT = "desktop", "mobile", "tablet", "bot"
DEVICE_TYPES = (DESKTOP, MOBILE, TABLET, BOT)
MEDIA = ("search", "social", "email", "referral", "direct", "internal")

_MOBILE_OS = frozenset(("iOS", "Android", "Windows Phone", "KaiOS", "BlackBerry OS", "Tizen"))
_TABLET = re.compile(r"ipad|tablet|kindle|silk/|playbook|nexus (7|9|10)|sm-t\d", re.IGNORECASE)


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


@dataclass(frozen=True, slots=True)
class Agent:
    browser: str | None = None
    browser_version: str | None = None
    os: str | None = None
    os_version: str | None = None
    device: str | None = None


NO_AGENT = Agent()


def _version(*parts: str | None) -> str | None:
    found = [p for p in parts if p]
    return ".".join(found) if found else None


@lru_cache(maxsize=AGENT_CACHE)
def agent(user_agent: str | None) -> Agent:
    """Browser, OS and device type of a user-agent string (cached per string)."""
    if not user_agent:
        return NO_AGENT
    parsed = ua_parser.parse(user_agent)
    browser, os, device = parsed.user_agent, parsed.os, parsed.device
    if (
        is_bot_agent(user_agent)
        or crawleruseragents.is_crawler(user_agent)
        or (device is not None and device.family == "Spider")
    ):
        kind = BOT
    elif (device is not None and _TABLET.search(device.family or "")) or _TABLET.search(user_agent):
        kind = TABLET
    elif os is not None and os.family == "Android" and "Mobile" not in user_agent:
        kind = TABLET  # Android tablets leave "Mobile" out of their user agent
    elif (os is not None and os.family in _MOBILE_OS) or "Mobile" in user_agent:
        kind = MOBILE
    else:
        kind = DESKTOP
    name = browser.family if browser is not None and browser.family != "Other" else None
    system = os.family if os is not None and os.family != "Other" else None
    if name is None and system is None and kind != BOT:
        return NO_AGENT  # an SDK's or a script's own agent: nothing to say about a device
    return Agent(
        browser=name,
        browser_version=browser.major if name and browser is not None else None,
        os=system,
        os_version=_version(os.major, os.minor) if system and os is not None else None,
        device=kind,
    )


# Layouts a page is seen in, by viewport width (CSS px): the classes heatmaps split by too.
VIEWPORTS = ("<640", "640-1024", ">1024")


def viewport_class(width: int | None) -> str | None:
    if not width:
        return None
    return VIEWPORTS[0] if width < 640 else VIEWPORTS[1] if width <= 1024 else VIEWPORTS[2]


def country(ip: str | None) -> str | None:
    """ISO 3166-1 alpha-2 country of a public address; None for private or unknown ones."""
    if not ip:
        return None
    try:
        address = ipaddress.ip_address(ip.strip())
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    if not address.is_global:
        return None
    code = iptocc.country_code(str(address))
    return code.upper() if isinstance(code, str) and len(code) == 2 else None


_LANGUAGE = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})?")


def language(accept_language: str | None) -> str | None:
    """The first language tag of an Accept-Language header or a locale ("de-DE", "en")."""
    if not accept_language:
        return None
    first = accept_language.split(",")[0].split(";")[0].strip().replace("_", "-")
    match = _LANGUAGE.match(first)
    if not match:
        return None
    primary, _, sub = match.group(0).partition("-")
    if not sub:
        return primary.lower()
    return f"{primary.lower()}-{sub.upper() if len(sub) <= 3 else sub.title()}"  # de-DE, zh-Hant


# Click ids an ad platform appends: (parameter, source, medium).
_CLICK_IDS = (
    ("gclid", "Google", "cpc"),
    ("gbraid", "Google", "cpc"),
    ("wbraid", "Google", "cpc"),
    ("msclkid", "Bing", "cpc"),
    ("fbclid", "Facebook", "social"),  # also on organic links from Facebook
)
UTM = ("utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content")


@dataclass(frozen=True, slots=True)
class Acquisition:
    source: str | None = None
    medium: str | None = None
    campaign: str | None = None
    term: str | None = None
    content: str | None = None


def _host(url: str | None) -> str | None:
    if not url:
        return None
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return host.lower().removeprefix("www.") if host else None


def _query(url: str | None) -> dict[str, str]:
    if not url or "?" not in url:
        return {}
    try:
        query = urlsplit(url).query
    except ValueError:
        return {}
    found: dict[str, str] = {}
    for key, value in parse_qsl(query, keep_blank_values=False):
        key = key.lower()
        if key not in found and value.strip():
            found[key] = value.strip()[:200]
    return found


def acquisition(
    url: str | None, referrer: str | None, context: dict[str, Any] | None = None
) -> Acquisition:
    """Where a session came from, by its landing event (url, referrer, SDK context)."""
    params = _query(url)
    for key in UTM:
        if context and context.get(key) and key not in params:
            params[key] = str(context[key])[:200]  # Segment's context.campaign
    campaign, term, content = (params.get(k) for k in UTM[2:])
    referrer_host = _host(referrer)
    if params.get("utm_source") or params.get("utm_medium"):
        source = sources.source_name(params.get("utm_source"))
        medium = (params.get("utm_medium") or "").lower() or None
        if source is None and referrer_host:
            source = sources.referrer(referrer_host)[0]
        return Acquisition(source, medium, campaign, term, content)
    for parameter, source, medium in _CLICK_IDS:
        if parameter in params:
            return Acquisition(source, medium, campaign, term, content)
    if not referrer_host:
        return Acquisition("(direct)", "direct", campaign, term, content)
    if referrer_host == _host(url):
        return Acquisition("(internal)", "internal", campaign, term, content)
    source, medium = sources.referrer(referrer_host)
    return Acquisition(source, medium, campaign, term, content)
