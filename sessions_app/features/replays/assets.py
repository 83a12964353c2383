"""Stylesheets stored once per site by content hash (docs/replay.md, Storage).

rrweb inlines every stylesheet the page can read into the page load's snapshot: a
`<link>` or `<style>` element's `_cssText` attribute, or the text of a `<style>`
element (a text node with `isStyle`). Each page load of a visitor carries the same
site CSS again. At ingest, every such text of at least MIN_BYTES is written once to
replay_assets under its SHA-256 and replaced in the chunk by `{"_cs_asset": "<hash>"}`
(an object where rrweb has a string: never page content); the player's read
(features/replays/reads.py) puts the text back. Fonts are not recorded (`collectFonts: false`).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import orjson
from django.conf import settings
from redis.exceptions import RedisError

from sessions_app.foundation.core import payloads
from sessions_app.foundation.core.redis_client import redis_client
from sessions_app.foundation.models import Site
from sessions_app.foundation.tables import replay_assets

MIN_BYTES = 1024  # shorter stylesheets stay in the chunk: a reference saves too little
MARK = "_cs_asset"
KIND = "css"
_HEX = re.compile(r"[0-9a-f]{64}")
MISSING = "/* clickstream: this stylesheet ({}) is no longer stored */"
UNREADABLE = "/* clickstream: this stylesheet ({}) could not be read */"


def _dicts(events: Any) -> Iterator[dict[str, Any]]:
    """Every object inside the events (iterative: a deep DOM does not reach the
    recursion limit)."""
    stack = [events]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            yield item
            stack.extend(v for v in item.values() if isinstance(v, list | dict))


def _slots(events: Any) -> Iterator[tuple[dict[str, Any], str]]:
    """Every (object, key) of the events whose value is a stylesheet's text."""
    for item in _dicts(events):
        if isinstance(item.get("_cssText"), str):
            yield item, "_cssText"
        if item.get("isStyle") is True and isinstance(item.get("textContent"), str):
            yield item, "textContent"


def _references(events: Any) -> Iterator[tuple[dict[str, Any], str, str]]:
    """Every (object, key, hash) of a reference left by `assets_split`."""
    for item in _dicts(events):
        for key, value in item.items():
            if isinstance(value, dict) and len(value) == 1 and isinstance(value.get(MARK), str):
                yield item, key, value[MARK]


def may_hold_stylesheets(text: bytes) -> bool:
    """Whether a chunk's JSON may hold a stylesheet (a byte search: most chunks hold only
    changes and input, and are not walked)."""
    return b"_cssText" in text or b'"isStyle"' in text


# `"_cssText": "<a JSON string>"`: in valid JSON an unescaped quote never falls inside a
# string, so every match is the key and its whole value (possessive: no backtracking).
_CSS_TEXT = re.compile(rb'"_cssText"\s*:\s*"((?:[^"\\]++|\\.)*+)"')


def assets_split_text(text: bytes) -> tuple[bytes, dict[str, str]]:
    """Replace each `_cssText` stylesheet of at least MIN_BYTES in a chunk's JSON text by
    its reference (a byte search: the DOM is not walked); return the text and {hash:
    text} of those replaced. rrweb 2 records every stylesheet so; `assets_split` walks
    the parsed events for the text nodes older recorders marked `isStyle`."""
    found: dict[str, str] = {}

    def slim(match: re.Match[bytes]) -> bytes:
        literal = match.group(1)
        if len(literal) < MIN_BYTES:  # the text is never longer than its JSON literal
            return match.group(0)
        css = _json_string(literal)
        raw = css.encode("utf-8", "surrogatepass")
        if len(raw) < MIN_BYTES:
            return match.group(0)
        digest = hashlib.sha256(raw).hexdigest()
        found[digest] = css
        return b'"_cssText":{"' + MARK.encode() + b'":"' + digest.encode() + b'"}'

    return _CSS_TEXT.sub(slim, text), found


def _json_string(literal: bytes) -> str:
    quoted = b'"' + literal + b'"'
    try:
        return orjson.loads(quoted)
    except orjson.JSONDecodeError:  # a lone surrogate's escape: the stdlib reads it
        return json.loads(quoted)


def assets_split(events: list[Any]) -> dict[str, str]:
    """Replace each stylesheet of at least MIN_BYTES by its reference, in place; return
    {hash: text} of those replaced."""
    found: dict[str, str] = {}
    for holder, key in list(_slots(events)):
        text = holder[key]
        raw = text.encode("utf-8", "surrogatepass")
        if len(raw) < MIN_BYTES:
            continue
        digest = hashlib.sha256(raw).hexdigest()
        found[digest] = text
        holder[key] = {MARK: digest}
    return found


def _marker(site: Site, digest: str) -> str:
    return replay_assets.marker_key(site.id, site.replay_retention_days, digest)


# {hash: (bytes of the text, its gzip)}: the stylesheets of a chunk, ready to store.
Packed = dict[str, tuple[int, bytes]]


# The compressed stylesheets of this process, by hash: a site's CSS comes with every
# page load of every visitor, and is compressed once (emptied when full).
_PACKED: Packed = {}
PACKED_KEPT = 256


def assets_pack(found: dict[str, str]) -> Packed:
    """Compress the stylesheets taken out of a chunk (their size is counted against the
    chunk's budgets before anything is written)."""
    packed = {}
    for digest, text in found.items():
        if digest not in _PACKED:
            if len(_PACKED) >= PACKED_KEPT:
                _PACKED.clear()
            raw = text.encode("utf-8", "surrogatepass")
            _PACKED[digest] = (len(raw), gzip.compress(raw, compresslevel=6))
        packed[digest] = _PACKED[digest]
    return packed


def assets_store(site: Site, packed: Packed) -> int:
    """Write the stylesheets not written for this site (and retention) in the last day;
    how many were written. Without Redis every one is written (the same row again)."""
    ttl = (site.replay_retention_days + replay_assets.REWRITE_DAYS) * 86_400
    written = 0
    for digest, (size, data) in packed.items():
        try:
            fresh = redis_client().set(
                _marker(site, digest), "1", nx=True, ex=replay_assets.REWRITE_DAYS * 86_400
            )
        except RedisError:
            fresh = True
        if not fresh:
            continue
        row = replay_assets.Row(
            site_id=site.id, hash=digest, kind=KIND, size=size, data=data, ttl=ttl
        )
        try:
            replay_assets.asset_insert(row)
        except BaseException:  # not written: the next chunk naming it writes it
            with contextlib.suppress(RedisError):
                redis_client().delete(_marker(site, digest))
            raise
        written += 1
    return written


def assets_restore(site_id: uuid.UUID, bodies: list[Any]) -> list[str]:
    """Put the stylesheets back into the chunks' bodies, in place (one bounded read);
    return the hashes no longer stored (their text becomes a CSS comment saying so)."""
    slots = [slot for body in bodies for slot in _references(body)]
    hashes = [digest for *_, digest in slots if _HEX.fullmatch(digest)]
    stored = replay_assets.assets_read(site_id=site_id, hashes=hashes)
    texts: dict[str, str] = {}
    missing = set()
    for holder, key, digest in slots:
        data = stored.get(digest)
        if data is None:
            missing.add(digest)
            holder[key] = MISSING.format(digest[:12] if _HEX.fullmatch(digest) else "?")
            continue
        if digest not in texts:
            texts[digest] = _text_of(data, digest)
        holder[key] = texts[digest]
    return sorted(missing)


def _text_of(data: bytes | None, digest: str) -> str:
    """A stored stylesheet's text (bounded); a CSS comment saying so when it cannot be read."""
    try:
        raw = payloads.gzip_inflate(data or b"", settings.REPLAY_MAX_INFLATED_BYTES)
        return raw.decode("utf-8", "surrogatepass")
    except (payloads.PayloadError, UnicodeDecodeError):
        return UNREADABLE.format(digest[:12])
