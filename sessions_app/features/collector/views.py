"""Collector endpoints: POST /collect (the tracker) and the Segment-compatible /v1/*.

No CSRF (cross-site by design; no cookies are read), CORS from each site's allow-list,
never Access-Control-Allow-Credentials. Every error is JSON naming the field.
"""

from __future__ import annotations

import base64
import binascii
import logging
import time
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from redis.exceptions import RedisError

from sessions_app.domain.ingest.limits import rate_limited
from sessions_app.domain.ingest.pipeline import Source, StorageUnavailable, events_record
from sessions_app.domain.ingest.segment import segment_to_events
from sessions_app.domain.ingest.validation import (
    BatchError,
    EventError,
    gunzip,
    parse_batch,
    parse_json,
    parse_time,
)
from sessions_app.domain.ingest.visit import client_ip
from sessions_app.domain.ledger.sites import (
    SITE_CACHE_SECONDS,
    origin_allowed,
    origins_of_enabled_sites,
)
from sessions_app.features.collector.timing import RequestClock
from sessions_app.features.replays import chunks
from sessions_app.foundation.models import Site

log = logging.getLogger(__name__)


def _error(status: int, field: str, message: str, **headers: str) -> JsonResponse:
    response = JsonResponse({"error": f"{field}: {message}", "field": field}, status=status)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def _site_by_key(key: str) -> Site | None:
    cache_key = f"site-key:{key}"
    site = cache.get(cache_key)
    if site is None:
        site = Site.objects.filter(key=key).first()
        cache.set(cache_key, site or False, SITE_CACHE_SECONDS)
    return site or None


def _cors(response: HttpResponse, origin: str | None, allowed: bool) -> HttpResponse:
    if origin and allowed:
        response["Access-Control-Allow-Origin"] = origin
        response["Vary"] = "Origin"
    return response


def read_body(request: HttpRequest, cap: int | None = None) -> bytes:
    """Return the body, at most `cap` (COLLECT_MAX_BODY_BYTES), whatever Content-Length claims.

    A declared length over the cap is refused before reading; without a
    declared length (chunked), the raw stream is read up to cap + 1 bytes.
    """
    cap = cap or settings.COLLECT_MAX_BODY_BYTES
    declared = request.META.get("CONTENT_LENGTH") or ""
    try:
        length = int(declared) if declared else None
    except ValueError:
        raise BatchError(400, "Content-Length", "not a number") from None
    if length is not None and length > cap:
        raise BatchError(413, "body", f"{length} bytes; at most {cap}")
    stream: Any
    if length is not None:
        stream = request
    elif "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
        stream = request.META.get("wsgi.input")
    else:
        return b""  # neither a length nor a chunked body: nothing was sent
    data = stream.read(cap + 1) if stream is not None else b""
    if len(data) > cap:
        raise BatchError(413, "body", f"more than {cap} bytes")
    return data


def _record(
    request: HttpRequest,
    site: Site,
    raw_events: list[Any],
    sent_at: Any,
    source_name: str,
    user_agent: str | None,
    origin: str | None,
    clock: RequestClock | None = None,
) -> HttpResponse:
    ip = client_ip(request.META, trusted_proxies=settings.TRUSTED_PROXY_COUNT)
    try:
        limit = rate_limited(site_id=site.id, ip=ip, events=len(raw_events))
    except RedisError:
        limit = None  # fail open: losing analytics is worse than a missed limit
        log.warning("rate limiting skipped: Redis unavailable")
    if limit:
        response = _error(
            429, limit, f"too many requests for this {limit}; retry shortly", Retry_After="1"
        )
        return _cors(response, origin, True)
    # A server-side SDK's request comes from the customer's server: its address and
    # languages are not the visitor's (the message's context.ip / locale are).
    visitor = source_name != "segment" or origin is not None
    source = Source(
        site=site,
        received_at=timezone.now(),
        sent_at=sent_at,
        user_agent=user_agent,
        ip=ip if visitor else None,
        name=source_name,
        accept_language=request.META.get("HTTP_ACCEPT_LANGUAGE") if visitor else None,
    )
    try:
        outcome = events_record(source=source, raw_events=raw_events)
    except StorageUnavailable as exc:
        log.warning("collector 503: %s", exc)
        response = _error(
            503, "storage", f"temporarily unavailable ({exc}); retry", Retry_After="2"
        )
        return _cors(response, origin, True)
    response = JsonResponse(outcome.as_dict())
    if clock:
        response["Server-Timing"] = clock.header(outcome.timings)
    return _cors(response, origin, True)


@csrf_exempt
def collect(request: HttpRequest) -> HttpResponse:
    """Accept a tracker batch: JSON or text/plain body {"site", "sent_at"?, "events": [...]}."""
    clock = RequestClock() if settings.COLLECT_SERVER_TIMING else None
    origin = request.headers.get("Origin")
    if request.method == "OPTIONS":
        return _preflight(request, origin)
    if request.method != "POST":
        return _error(405, "method", "use POST", Allow="POST, OPTIONS")
    try:
        body = read_body(request)
        batch = parse_batch(parse_json(body), max_events=settings.COLLECT_MAX_EVENTS)
    except BatchError as exc:
        return _cors(JsonResponse(exc.as_dict(), status=exc.status), origin, True)
    site = _site_by_key(batch.site_key)
    if site is None or not site.enabled:
        state = "disabled" if site else "unknown"
        return _cors(_error(401, "site", f"{state} site key"), origin, True)
    if not origin_allowed(site, origin):
        # The error is readable cross-origin (no data in it), so the tracker sees a
        # 403 and drops the batch instead of retrying a network error forever.
        response = _error(403, "origin", f"{origin} is not an allowed origin of this site")
        return _cors(response, origin, True)
    return _record(
        request,
        site,
        batch.events,
        batch.sent_at,
        "collect",
        request.headers.get("User-Agent"),
        origin,
        clock,
    )


@csrf_exempt
def replay(request: HttpRequest) -> HttpResponse:
    """Accept one session replay chunk (sessions_app/features/replays/chunks.py; docs/replay.md):
    the site key in ?site= and the chunk, its origin on the site's allow-list, the
    collector's rate limit; a rejected chunk is counted in ingest_stats by its field."""
    origin = request.headers.get("Origin")
    if request.method == "OPTIONS":
        return _preflight(request, origin)
    if request.method != "POST":
        return _error(405, "method", "use POST", Allow="POST, OPTIONS")
    site = _site_by_key(request.GET.get("site", ""))
    if site is None or not site.enabled:
        return _cors(_error(401, "site", "unknown or disabled site key (?site=)"), origin, True)
    if not origin:  # the recorder runs in a page: a browser's POST always names its origin
        response = _error(403, "origin", "required: chunks come from the recorder on a page")
        return _cors(response, origin, True)
    if not origin_allowed(site, origin):
        response = _error(403, "origin", f"{origin} is not an allowed origin of this site")
        return _cors(response, origin, True)
    ip = client_ip(request.META, trusted_proxies=settings.TRUSTED_PROXY_COUNT)
    try:
        limit = rate_limited(site_id=site.id, ip=ip, events=1)
    except RedisError:
        limit = None  # fail open, as /collect
    if limit:
        response = _error(429, limit, f"too many requests for this {limit}", Retry_After="1")
        return _cors(response, origin, True)
    received_at = timezone.now()
    try:
        body = read_body(request, settings.REPLAY_MAX_CHUNK_BYTES)
        answer = chunks.chunk_accept(site, body, received_at=received_at)
    except (BatchError, chunks.ChunkError) as exc:
        if exc.status != 409:  # 409: the session is not known yet, the recorder retries
            chunks.rejection_record(site, exc.field, received_at=received_at)
        return _cors(JsonResponse(exc.as_dict(), status=exc.status), origin, True)
    return _cors(JsonResponse(answer), origin, True)


def _preflight(request: HttpRequest, origin: str | None) -> HttpResponse:
    """Answer CORS preflight from the site's allow-list (site key from ?site=)."""
    key = request.GET.get("site")
    if key:
        site = _site_by_key(key)
        allowed = site is not None and site.enabled and origin_allowed(site, origin)
    else:
        allowed = origin is not None and origin.rstrip("/") in origins_of_enabled_sites()
    if not allowed:
        return _error(403, "origin", f"{origin} is not an allowed origin")
    response = HttpResponse(status=204)
    response["Access-Control-Allow-Origin"] = origin or ""
    response["Access-Control-Allow-Methods"] = "POST, OPTIONS"
    response["Access-Control-Allow-Headers"] = "Content-Type"
    response["Access-Control-Max-Age"] = "86400"
    response["Vary"] = "Origin"
    return response


def _basic_auth_key(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic" or not value:
        return None
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return decoded.partition(":")[0] or None


@csrf_exempt
def segment(request: HttpRequest, kind: str) -> HttpResponse:
    """Accept Segment-style calls: /v1/batch and one message at /v1/<type>."""
    if request.method != "POST":
        return _error(405, "method", "use POST", Allow="POST")
    started = time.monotonic()
    try:
        body = read_body(request)
        if request.headers.get("Content-Encoding", "").lower() == "gzip":
            body = gunzip(body, settings.COLLECT_MAX_BODY_BYTES)
        data = parse_json(body)
        if not isinstance(data, dict):
            raise BatchError(400, "body", "expected a JSON object")
        key = _basic_auth_key(request) or data.get("writeKey")
        if not key:
            raise BatchError(401, "Authorization", "HTTP Basic auth with the site key as user")
        site = _site_by_key(str(key))
        if site is None or not site.enabled:
            raise BatchError(401, "Authorization", "unknown or disabled site key")
        origin = request.headers.get("Origin")
        if not origin_allowed(site, origin):  # a browser on a site not on the allow-list
            raise BatchError(403, "origin", f"{origin} is not an allowed origin of this site")
        messages = data.get("batch") if kind == "batch" else [{**data, "type": kind}]
        if not isinstance(messages, list) or not messages:
            raise BatchError(400, "batch", "required: a non-empty list of messages")
        if len(messages) > settings.COLLECT_MAX_EVENTS:
            raise BatchError(400, "batch", f"at most {settings.COLLECT_MAX_EVENTS} messages")
        sent_at = parse_time(data["sentAt"], "sentAt") if data.get("sentAt") else None
    except BatchError as exc:
        return JsonResponse(exc.as_dict(), status=exc.status)
    except EventError as exc:  # sentAt
        return _error(400, exc.field, str(exc).split(": ", 1)[1])
    batch_context = data.get("context") if kind == "batch" else None
    events, agent = segment_to_events(
        messages, batch_context if isinstance(batch_context, dict) else None
    )
    response = _record(request, site, events, sent_at, "segment", agent, origin)
    log.debug(
        "segment %s: %d messages in %.1f ms",
        kind,
        len(messages),
        (time.monotonic() - started) * 1000,
    )
    return response
