"""Parse and validate collector bodies; every problem names its field.

A body-level problem (not JSON, no `events` list) rejects the request; a
problem with one event rejects only that event, with a reason such as
"events[3].ts: more than 24h in the future (client clock?)".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import orjson

from sessions_app.domain.aggregates import vitals
from sessions_app.domain.ingest.enrich import country, viewport_class
from sessions_app.domain.ingest.visit import anonymize_ip
from sessions_app.foundation.core import payloads, timebuckets

EVENT_TYPES = ("pageview", "click", "custom")

LIMITS = {
    "id": 64,
    "name": 128,
    "anonymous_id": 128,
    "user_id": 256,
    "url": 2048,
    "referrer": 2048,
    "title": 512,
}

# An event's context (docs/tracker.md): where and with what it was recorded. Keys not
# listed here are ignored, never a reason to reject the event.
CONTEXT_LIMITS = {
    "category": 128,
    "screen": 128,
    "path": 2048,
    "search": 2048,
    "utm_source": 256,
    "utm_medium": 256,
    "utm_campaign": 256,
    "utm_term": 256,
    "utm_content": 256,
    "locale": 35,
    "timezone": 64,
    "user_agent": 512,
    "ip": 64,
}
LIBRARY_LIMITS = {"name": 128, "version": 64}

ELEMENT_LIMITS = {"tag": 32, "id": 128, "text": 128, "href": 2048, "selector": 512}
MAX_CLASSES = 20
MAX_CLASS_LENGTH = 128
MAX_PROPS = 50
MAX_PROP_KEY = 128
MAX_PROPS_BYTES = 4096
MAX_PROPS_DEPTH = 3
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f]")  # tab is allowed
_LATEST = datetime(9000, 1, 1, tzinfo=UTC)  # far from datetime.max: skew arithmetic fits
_LATEST_MS = timebuckets.epoch_ms(_LATEST)


class BatchError(Exception):
    """The whole request is unusable: HTTP status, the field at fault and why."""

    def __init__(self, status: int, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.status = status
        self.field = field
        self.message = message

    def as_dict(self) -> dict[str, str]:
        return {"error": f"{self.field}: {self.message}", "field": self.field}


def gunzip(body: bytes, cap: int) -> bytes:
    """Inflate a gzip body (a batch, a replay chunk) to at most `cap` bytes, or raise
    BatchError. Bounded: a small body that expands past the cap (a gzip bomb) is a 413
    after cap + 1 bytes, never decompressed in full; one gzip member, nothing after it."""
    try:
        return payloads.gzip_inflate(body, cap)
    except payloads.PayloadError as exc:
        raise BatchError(exc.status, "body", exc.message) from None


class EventError(ValueError):
    """One event is invalid; the message starts with the field name."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class Batch:
    """A parsed request: the site key, the client's send time and the raw events."""

    site_key: str
    sent_at: datetime | None
    events: list[Any]


@dataclass(frozen=True)
class ValidEvent:
    """One event that passed validation, in canonical form (ts UTC, millisecond precision;
    sub_ms the microseconds within that millisecond, when the client sent them)."""

    client_id: str
    type: str
    ts: datetime
    anonymous_id: str
    sub_ms: int = 0
    url: str | None = None
    name: str | None = None
    user_id: str | None = None
    referrer: str | None = None
    title: str | None = None
    element: dict[str, Any] | None = None
    props: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    viewport: int | None = None
    # The page's layout: vp, the viewport's class (enrich.VIEWPORTS) heatmaps and scroll
    # depth are split by; for a click, where it landed (x a fraction of the document's
    # width, y CSS px from its top, ex/ey fractions of the element's box), rage and dead.
    layout: dict[str, Any] | None = None


MAX_VIEWPORT = 20_000  # CSS pixels
MAX_PAGE_Y = 1_000_000  # CSS pixels from the document's top


def _viewport(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise EventError("viewport", "expected an integer width in CSS pixels")
    if not 0 < value <= MAX_VIEWPORT:
        raise EventError("viewport", f"expected 1 to {MAX_VIEWPORT} pixels")
    return int(value)


def parse_json(body: bytes) -> Any:
    """Decode a UTF-8 JSON body (RFC 8259) or raise BatchError(400).

    orjson, not the json module: it refuses what Python's decoder lets through and
    the rest of the pipeline cannot use — NaN and Infinity (stored, they break every
    later read of the session), lone surrogates (accepted, they cannot be encoded for
    Cassandra, so the batch's apply would fail on every redo) and nesting past 1,024
    levels (a RecursionError) — and it is several times faster.
    """
    if not body.strip():
        raise BatchError(400, "body", "empty body; expected a JSON object")
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BatchError(400, "body", f"invalid JSON ({exc.msg} at char {exc.pos})") from None


def parse_batch(data: Any, *, max_events: int) -> Batch:
    """Check the envelope {"site", "sent_at"?, "events": [...]} or raise BatchError(400)."""
    if not isinstance(data, dict):
        raise BatchError(400, "body", "expected a JSON object")
    site = data.get("site")
    if not isinstance(site, str) or not site:
        raise BatchError(400, "site", "required: the site key string")
    events = data.get("events")
    if not isinstance(events, list):
        raise BatchError(400, "events", "required: a list of events")
    if not events:
        raise BatchError(400, "events", "empty list")
    if len(events) > max_events:
        raise BatchError(400, "events", f"{len(events)} events; at most {max_events} a request")
    sent_at = None
    if data.get("sent_at") is not None:
        try:
            sent_at = parse_time(data["sent_at"])
        except EventError as exc:
            raise BatchError(400, "sent_at", str(exc).split(": ", 1)[1]) from None
    return Batch(site_key=site, sent_at=sent_at, events=events)


def parse_time(value: Any, field: str = "ts", *, exact: bool = False) -> datetime:
    """Return a UTC datetime from ISO-8601 with offset, or epoch milliseconds: floored to
    the millisecond, or with its microseconds when exact."""
    if isinstance(value, bool):
        raise EventError(field, "expected an ISO-8601 time or epoch milliseconds")
    if isinstance(value, int | float):
        if not math.isfinite(value) or not 0 < value < _LATEST_MS:
            raise EventError(field, "epoch milliseconds out of range")
        ts = timebuckets.EPOCH + timedelta(microseconds=round(value * 1000))
    elif isinstance(value, str) and len(value) <= 40:
        try:
            ts = datetime.fromisoformat(value)
        except ValueError:
            raise EventError(field, f"not an ISO-8601 time: {value!r}") from None
        if ts.tzinfo is None:
            raise EventError(field, "time zone missing (use Z or an offset)")
        # Aware datetimes compare as instants; converting year 1 or 9999 can overflow.
        if not timebuckets.EPOCH <= ts < _LATEST:
            raise EventError(field, "out of range (1970 to 9000)")
        ts = ts.astimezone(UTC)
    else:
        raise EventError(field, "expected an ISO-8601 time or epoch milliseconds")
    return ts if exact else ts.replace(microsecond=ts.microsecond // 1000 * 1000)


def _text(
    raw: dict[str, Any],
    key: str,
    *,
    required: bool = False,
    prefix: str = "",
    limits: dict[str, int] | None = None,
) -> str | None:
    value = raw.get(key)
    if value is None or (value == "" and not required):
        if required:
            raise EventError(prefix + key, "required")
        return None
    if not isinstance(value, str):
        raise EventError(prefix + key, f"expected a string, got {type(value).__name__}")
    if required and not value.strip():
        raise EventError(prefix + key, "required")
    limit = (limits or (ELEMENT_LIMITS if prefix else LIMITS)).get(key)
    if limit and len(value) > limit:
        raise EventError(prefix + key, f"{len(value)} characters; at most {limit}")
    if _CONTROL.search(value):
        raise EventError(prefix + key, "control characters are not allowed")
    return value


def is_http_url(value: str) -> bool:
    """Whether value is an absolute http(s) URL."""
    try:
        parts = urlsplit(value)
    except ValueError:  # "http://[x": an unclosed IPv6 host
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _url(raw: dict[str, Any], key: str, *, required: bool) -> str | None:
    value = _text(raw, key, required=required)
    if value is not None and not is_http_url(value):
        raise EventError(key, "expected an absolute http(s) URL")
    return value


def _element(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise EventError("element", "expected an object")
    element: dict[str, Any] = {}
    for key in ELEMENT_LIMITS:
        text = _text(value, key, prefix="element.")
        if text is not None:
            element[key] = text
    classes = value.get("classes")
    if classes is not None:
        if not isinstance(classes, list) or len(classes) > MAX_CLASSES:
            raise EventError("element.classes", f"expected a list of at most {MAX_CLASSES}")
        if not all(isinstance(c, str) and len(c) <= MAX_CLASS_LENGTH for c in classes):
            raise EventError("element.classes", f"strings of at most {MAX_CLASS_LENGTH} chars")
        element["classes"] = classes
    return element or None


def _layout(raw: dict[str, Any], kind: str, viewport: int | None) -> dict[str, Any] | None:
    """The viewport's class; a click's position and its rage and dead flags."""
    found: dict[str, Any] = {}
    pos = raw.get("pos")
    if pos is not None:
        if kind != "click":
            raise EventError("pos", "only clicks have a position")
        if not isinstance(pos, dict):
            raise EventError("pos", "expected an object {x, y, ex, ey}")
        for key in ("x", "ex", "ey"):
            value = pos.get(key)
            if value is None and key != "x":
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise EventError(f"pos.{key}", "expected a fraction from 0 to 1")
            found[key] = round(float(value), 4)
        y = pos.get("y")
        if isinstance(y, bool) or not isinstance(y, int | float) or not 0 <= y <= MAX_PAGE_Y:
            raise EventError("pos.y", f"expected CSS pixels from 0 to {MAX_PAGE_Y}")
        found["y"] = int(y)
    for flag in ("rage", "dead"):
        value = raw.get(flag)
        if value is None or value is False:
            continue
        if value is not True:
            raise EventError(flag, "expected true or false")
        if kind != "click":
            raise EventError(flag, "only clicks are flagged")
        found[flag] = True
    if viewport:
        found["vp"] = viewport_class(viewport)
    return found or None


def _context(value: Any) -> dict[str, Any] | None:
    """The known context fields, checked; the IP anonymized like every stored IP."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise EventError("context", "expected an object")
    context: dict[str, Any] = {}
    for key in CONTEXT_LIMITS:
        text = _text(value, key, prefix="context.", limits=CONTEXT_LIMITS)
        if text is not None:
            context[key] = text
    if "ip" in context:
        raw_ip = context.pop("ip")
        found = country(raw_ip)  # derived before the address is anonymised
        if found:
            context["country"] = found
        ip = anonymize_ip(raw_ip)
        if ip:
            context["ip"] = ip
    library = value.get("library")
    if library is not None:
        if not isinstance(library, dict):
            raise EventError("context.library", "expected an object {name, version}")
        parts = {}
        for key in LIBRARY_LIMITS:
            text = _text(library, key, prefix="context.library.", limits=LIBRARY_LIMITS)
            if text is not None:
                parts[key] = text
        if parts:
            context["library"] = parts
    return context or None


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether containers nest more than limit levels (stops looking below the limit)."""
    if not isinstance(value, dict | list):
        return False
    if limit == 0:
        return True
    children = value.values() if isinstance(value, dict) else value
    return any(_deeper_than(child, limit - 1) for child in children)


def _props(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise EventError("props", "expected an object")
    if len(value) > MAX_PROPS:
        raise EventError("props", f"{len(value)} keys; at most {MAX_PROPS}")
    for key in value:
        if len(key) > MAX_PROP_KEY:
            raise EventError("props", f"key longer than {MAX_PROP_KEY} characters")
    if _deeper_than(value, MAX_PROPS_DEPTH):
        raise EventError("props", f"nested deeper than {MAX_PROPS_DEPTH} levels")
    try:
        size = len(orjson.dumps(value))
    except TypeError:  # an int past 64 bits, from a Python caller (bodies decode it as float)
        raise EventError("props", "integers must fit in 64 bits") from None
    if size > MAX_PROPS_BYTES:
        raise EventError("props", f"{size} bytes as JSON; at most {MAX_PROPS_BYTES}")
    return value or None


def validate_event(raw: Any) -> ValidEvent:
    """Return the canonical event or raise EventError naming the first bad field."""
    if not isinstance(raw, dict):
        raise EventError("event", "expected an object")
    client_id = _text(raw, "id", required=True)
    kind = raw.get("type")
    if kind not in EVENT_TYPES:
        raise EventError("type", f"expected one of {', '.join(EVENT_TYPES)}")
    name = _text(raw, "name", required=kind == "custom")
    if "ts" not in raw:
        raise EventError("ts", "required")
    exact = parse_time(raw["ts"], exact=True)
    anonymous_id = _text(raw, "anonymous_id", required=True)
    assert client_id is not None and anonymous_id is not None  # required above
    # Server-side custom events have no page; a server-side page view may have only a name.
    url = _url(raw, "url", required=kind == "click" or (kind == "pageview" and not name))
    props = _props(raw.get("props"))
    if kind == "custom" and name == vitals.NAME:  # web vitals (domain/aggregates/vitals.py)
        problem = vitals.vitals_problem(props) if url else ("url", "required: the page measured")
        if problem:
            raise EventError(*problem)
    return ValidEvent(
        client_id=client_id,
        type=kind,
        name=name,
        ts=timebuckets.floor_ms(exact),
        sub_ms=exact.microsecond % 1000,
        anonymous_id=anonymous_id,
        user_id=_text(raw, "user_id"),
        url=url,
        referrer=_url(raw, "referrer", required=False) if raw.get("referrer") else None,
        title=_text(raw, "title"),
        element=_element(raw.get("element")),
        props=props,
        context=_context(raw.get("context")),
        viewport=(viewport := _viewport(raw.get("viewport"))),
        layout=_layout(raw, kind, viewport),
    )
