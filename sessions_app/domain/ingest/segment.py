"""Map Segment-spec messages (track, page, screen, identify, group, alias) onto collector events.

Where each field goes (docs/tracker.md, "Segment fields"):
messageId → id; anonymousId/userId → anonymous_id/user_id; timestamp → ts (its
microseconds order events within a millisecond); properties → props;
context.page / page properties → url, referrer, title, context.path/search;
page and screen name → name (screen: context.screen), category → context.category;
context.campaign → context.utm_*; context.userAgent, ip, locale, timezone, library →
context; identify traits (traits, then context.traits) → props of `$identify` and the
user's properties; group → `$group` with props {group_id, traits}; alias → `$alias`
whose user id is userId and anonymous id previousId, which links the two like an
identify after anonymous activity.

Fields that are not understood are dropped, never a reason to reject: text the
collector would refuse (a URL that is not http(s), a value over its length limit) is
left out or cut, so only what the event cannot do without (id, time, names) can fail
validation, which then names the field.
"""

from __future__ import annotations

from typing import Any

from sessions_app.domain.ingest.validation import CONTEXT_LIMITS, LIBRARY_LIMITS, is_http_url

_CAMPAIGN = {
    "source": "utm_source",
    "medium": "utm_medium",
    "name": "utm_campaign",
    "term": "utm_term",
    "content": "utm_content",
}
# Page properties that become the event's own fields (not repeated in its props).
_PAGE_FIELDS = frozenset(("url", "path", "referrer", "title", "search", "name", "category"))
_CONTEXT = {
    "locale": "locale",
    "timezone": "timezone",
    "userAgent": "user_agent",
    "ip": "ip",
}


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _clean(value: Any, limit: int) -> str | None:
    """A string cut to its limit, without control characters; anything else is None."""
    if not isinstance(value, str):
        return None
    value = "".join(ch if ch >= " " or ch == "\t" else " " for ch in value).strip()
    return value[:limit] or None


def _http(value: Any) -> str | None:
    value = _clean(value, 2048)
    return value if value and is_http_url(value) else None


def _context(
    message: dict[str, Any], page: dict[str, Any], properties: dict[str, Any]
) -> dict[str, Any] | None:
    context = _object(message.get("context"))
    found: dict[str, Any] = {}
    for source, key in _CONTEXT.items():
        found[key] = context.get(source)
    campaign = _object(context.get("campaign"))
    for source, key in _CAMPAIGN.items():
        found[key] = campaign.get(source)
    kind = message.get("type")
    if kind in ("page", "screen"):
        found["category"] = message.get("category") or properties.get("category")
    if kind == "screen":
        found["screen"] = message.get("name") or properties.get("name")
    found["path"] = (properties.get("path") if kind == "page" else None) or page.get("path")
    found["search"] = (properties.get("search") if kind == "page" else None) or page.get("search")
    out: dict[str, Any] = {}
    for key, value in found.items():
        text = _clean(value, CONTEXT_LIMITS[key])
        if text:
            out[key] = text
    library = _object(context.get("library"))
    parts = {k: _clean(library.get(k), n) for k, n in LIBRARY_LIMITS.items()}
    if any(parts.values()):
        out["library"] = {k: v for k, v in parts.items() if v}
    return out or None


def _traits(message: dict[str, Any]) -> dict[str, Any] | None:
    """Identify traits: context.traits (RudderStack sends them there), then traits."""
    context = _object(message.get("context"))
    traits = {**_object(context.get("traits")), **_object(message.get("traits"))}
    return traits or None


def segment_message(message: Any, defaults: dict[str, Any] | None = None) -> Any:
    """Return the collector event for one Segment message (batch-level context as defaults)."""
    if not isinstance(message, dict):
        return message
    if defaults:
        message = {**message, "context": {**defaults, **_object(message.get("context"))}}
    kind = message.get("type")
    page = _object(_object(message.get("context")).get("page"))
    properties = _object(message.get("properties"))
    user_id = message.get("userId")
    event: dict[str, Any] = {
        "id": message.get("messageId"),
        "ts": message.get("timestamp") or message.get("originalTimestamp"),
        "anonymous_id": message.get("anonymousId") or user_id,
        "user_id": user_id,
        "url": _http(page.get("url")),
        "referrer": _http(page.get("referrer")),
        "title": _clean(page.get("title"), 512),
        "context": _context(message, page, properties),
    }
    if kind == "track":
        event.update(type="custom", name=message.get("event"), props=properties or None)
    elif kind == "page":
        event.update(
            type="pageview",
            name=_clean(message.get("name") or properties.get("name"), 128),
            url=_http(properties.get("url")) or event["url"],
            title=_clean(properties.get("title"), 512) or event["title"],
            referrer=_http(properties.get("referrer")) or event["referrer"],
            props={k: v for k, v in properties.items() if k not in _PAGE_FIELDS} or None,
        )
    elif kind == "screen":
        props = {k: v for k, v in properties.items() if k not in _PAGE_FIELDS}
        event.update(type="custom", name="$screen", props=props or None)
    elif kind == "identify":
        event.update(type="custom", name="$identify", props=_traits(message))
    elif kind == "group":
        group = {"group_id": message.get("groupId"), "traits": _object(message.get("traits"))}
        event.update(
            type="custom", name="$group", props={k: v for k, v in group.items() if v} or None
        )
    elif kind == "alias":
        previous = message.get("previousId")
        event.update(
            type="custom",
            name="$alias",
            anonymous_id=previous or event["anonymous_id"],
            props={"previous_id": previous} if previous else None,
        )
    else:
        event["type"] = kind  # validation names the unsupported type
    return {k: v for k, v in event.items() if v is not None}


def segment_to_events(
    messages: list[Any], defaults: dict[str, Any] | None = None
) -> tuple[list[Any], str | None]:
    """Return the collector events for a batch and the first context.userAgent seen."""
    agent = None
    for message in messages:
        context = message.get("context") if isinstance(message, dict) else None
        if isinstance(context, dict) and isinstance(context.get("userAgent"), str):
            agent = context["userAgent"]
            break
    if agent is None and defaults and isinstance(defaults.get("userAgent"), str):
        agent = defaults["userAgent"]
    return [segment_message(m, defaults) for m in messages], agent
