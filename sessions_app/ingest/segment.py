"""Map Segment-spec messages (track, page, identify, …) onto collector events.

messageId → id, anonymousId/userId, timestamp → ts, properties → props,
context.page → url/referrer/title. A message that cannot be mapped is passed
on unchanged, so validation rejects it with its index and a reason.
"""

from __future__ import annotations

from typing import Any


def _page(message: dict[str, Any]) -> dict[str, Any]:
    context = message.get("context")
    page = context.get("page") if isinstance(context, dict) else None
    return page if isinstance(page, dict) else {}


def segment_message(message: Any) -> Any:
    """Return the collector event for one Segment message."""
    if not isinstance(message, dict):
        return message
    kind = message.get("type")
    page = _page(message)
    properties = message.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    event: dict[str, Any] = {
        "id": message.get("messageId"),
        "ts": message.get("timestamp") or message.get("originalTimestamp"),
        "anonymous_id": message.get("anonymousId") or message.get("userId"),
        "user_id": message.get("userId"),
        "url": page.get("url"),
        "referrer": page.get("referrer") or None,
        "title": page.get("title"),
    }
    if kind == "track":
        event.update(type="custom", name=message.get("event"), props=properties or None)
    elif kind == "page":
        event.update(
            type="pageview",
            url=properties.get("url") or page.get("url"),
            title=properties.get("title") or page.get("title") or message.get("name"),
            referrer=properties.get("referrer") or event["referrer"],
        )
    elif kind == "identify":
        traits = message.get("traits")
        event.update(
            type="custom",
            name="$identify",
            props=traits if isinstance(traits, dict) and traits else None,
        )
    elif kind in ("screen", "group", "alias"):
        event.update(type="custom", name=f"${kind}", props=properties or None)
    else:
        event["type"] = kind  # validation names the unsupported type
    return {k: v for k, v in event.items() if v is not None}


def segment_to_events(messages: list[Any]) -> tuple[list[Any], str | None]:
    """Return the collector events for a batch and the first context.userAgent seen."""
    agent = None
    for message in messages:
        context = message.get("context") if isinstance(message, dict) else None
        if isinstance(context, dict) and isinstance(context.get("userAgent"), str):
            agent = context["userAgent"]
            break
    return [segment_message(m) for m in messages], agent
