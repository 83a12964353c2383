"""Where a visit came from, by name: the referrer table and the one spelling of a source.

A session's source is a referrer's host matched against `REFERRERS` (search engines,
social networks, webmail: "Google", "Instagram"), or the landing URL's `utm_source`.
Both are spelt one way (`source_name`), so a campaign tagged `utm_source=google` and a
visit from www.google.com are one row, as in Plausible:

- a known source's name in any case, one of its hosts (with or without `www.`, `m.`
  or a scheme) or a common shorthand (`fb`, `ig`, `yt`, `li`) is that source's name;
- anything else is folded to lower case, a host without its `www.` or `m.`
  ("Newsletter" and "newsletter" are one row, "News.example.com" is "news.example.com").

Ingest stores the name (domain/ingest/enrich.py); the read path spells stored values the
same way, so rows stored before are added up too (domain/aggregates/breakdowns.py;
docs/analysis.md, One source, one name). The table is ours: the referrer lists on PyPI
were last released in 2016 and 2021, and this one is a few dozen lines beside its tests.
"""

from __future__ import annotations

import re
from functools import lru_cache

# The referrer's host (without "www."), matched in order: (pattern, source, medium).
REFERRERS: tuple[tuple[re.Pattern[str], str, str], ...] = tuple(
    (re.compile(pattern + r"$"), source, medium)
    for pattern, source, medium in (
        # email first: webmail hosts live under search engines' and portals' domains
        (r"mail\.google\.com", "Gmail", "email"),
        (r"(outlook\.(live|office|office365)\.com|outlook\.com)", "Outlook", "email"),
        (r"mail\.yahoo\.(com|co\.[a-z]{2}|[a-z]{2})", "Yahoo Mail", "email"),
        (r"mail\.proton(mail)?\.(me|com|ch)", "Proton Mail", "email"),
        (r"(mail|e)\.(aol|gmx|web|yandex|zoho|icloud)\.[a-z.]+", "Webmail", "email"),
        (r"(www\.)?google(\.com?)?(\.[a-z]{2,3})?", "Google", "search"),
        (r"(www\.|cn\.)?bing\.com", "Bing", "search"),
        (r"(html\.|lite\.)?duckduckgo\.com", "DuckDuckGo", "search"),
        (r"([a-z]{2}\.)?search\.yahoo\.com", "Yahoo", "search"),
        (r"yandex\.(ru|com|com\.tr|by|kz|ua)", "Yandex", "search"),
        (r"(www\.|m\.)?baidu\.com", "Baidu", "search"),
        (r"ecosia\.org", "Ecosia", "search"),
        (r"qwant\.com", "Qwant", "search"),
        (r"search\.brave\.com", "Brave Search", "search"),
        (r"startpage\.com", "Startpage", "search"),
        (r"(search\.)?naver\.com", "Naver", "search"),
        (r"seznam\.cz", "Seznam", "search"),
        (r"kagi\.com", "Kagi", "search"),
        (r"(www\.|m\.|l\.|lm\.)?facebook\.com|fb\.me", "Facebook", "social"),
        (r"(l\.)?instagram\.com", "Instagram", "social"),
        (r"t\.co|(mobile\.)?twitter\.com|x\.com", "X (Twitter)", "social"),
        (r"(([a-z]{2})\.)?linkedin\.com|lnkd\.in", "LinkedIn", "social"),
        (r"((old|new|out|np)\.)?reddit\.com", "Reddit", "social"),
        (r"(m\.)?youtube\.com|youtu\.be", "YouTube", "social"),
        (r"([a-z]{2}\.)?pinterest\.[a-z.]+|pin\.it", "Pinterest", "social"),
        (r"tiktok\.com", "TikTok", "social"),
        (r"news\.ycombinator\.com", "Hacker News", "social"),
        (r"bsky\.app", "Bluesky", "social"),
        (r"mastodon\.social|mastodon\.online", "Mastodon", "social"),
        (r"threads\.(net|com)", "Threads", "social"),
        (r"vk\.com", "VK", "social"),
        (r"weibo\.com", "Weibo", "social"),
        (r"(www\.)?quora\.com", "Quora", "social"),
        (r"(discord\.com|discordapp\.com)", "Discord", "social"),
        (r"t\.me|web\.telegram\.org", "Telegram", "social"),
        (r"(web\.)?whatsapp\.com|wa\.me", "WhatsApp", "social"),
    )
)


# Shorthands campaigns tag utm_source with.
ALIASES = {
    "fb": "Facebook",
    "ig": "Instagram",
    "yt": "YouTube",
    "li": "LinkedIn",
    "tw": "X (Twitter)",
    "twitter": "X (Twitter)",
    "x": "X (Twitter)",
    "hn": "Hacker News",
    "ddg": "DuckDuckGo",
}
# A stored source that names no place: as ingest writes them.
MARKERS = ("(direct)", "(internal)")
_NAMES = {name.lower(): name for _, name, _ in REFERRERS} | ALIASES
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://")
MAX_LENGTH = 256


@lru_cache(maxsize=4096)
def referrer(host: str) -> tuple[str, str]:
    """(source, medium) of a referrer's host (lower case, without "www.")."""
    for pattern, source, medium in REFERRERS:
        if pattern.match(host):
            return source, medium
    return host, "referral"


@lru_cache(maxsize=4096)
def source_name(value: str | None) -> str | None:
    """The one spelling of a source (module docstring); None for an empty one."""
    text = (value or "").strip()[:MAX_LENGTH]
    if not text or text in MARKERS:
        return text or None
    folded = text.lower()
    if folded in _NAMES:
        return _NAMES[folded]
    host = _SCHEME.sub("", folded).split("/", 1)[0]
    for prefix in ("www.", "m."):
        host = host.removeprefix(prefix)
    if "." in host and " " not in host:
        return referrer(host)[0]
    return folded
