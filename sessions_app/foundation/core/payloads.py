"""Compressed JSON from the internet, and read back from storage, within bounds.

One gzip member, inflated to at most a cap (a small body that expands past it, a gzip
bomb, is refused after cap + 1 bytes); nothing after that member (a second member or a
trailer would be stored unchecked and inflated by every reader). JSON nested at most a
given depth: orjson stops at 1,024 levels and the standard library's parser at about
1,000 minus the caller's stack, so a payload accepted by one reader could crash another.
The collectors check with these; the readers (the replay player, the erasure's scan)
read with the same functions, so what was accepted reads back.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

import orjson


class PayloadError(ValueError):
    """A payload that cannot be read: the HTTP status a collector answers, and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def gzip_inflate(body: bytes, cap: int) -> bytes:
    """Return the text of a body of exactly one gzip member, at most `cap` bytes of it."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip header and trailer
    try:
        data = inflater.decompress(body, cap + 1)
    except zlib.error as exc:
        raise PayloadError(400, f"invalid gzip body ({exc})") from None
    if len(data) > cap:
        raise PayloadError(413, f"more than {cap} bytes once decompressed")
    if not inflater.eof:
        raise PayloadError(400, "invalid gzip body (truncated)")
    if inflater.unused_data:
        raise PayloadError(400, "bytes after the gzip stream (send one gzip member)")
    return data


# orjson parses at most this many levels of arrays and objects (1,025 is its error).
ORJSON_DEPTH = 1024


def json_parse(text: bytes, *, max_depth: int) -> Any:
    """Parse JSON nested at most `max_depth` levels (a scalar is level 0; at most 1,024).

    orjson (four times the standard library's speed), then the depth of a text with more
    arrays and objects than `max_depth` (`depth_within`). The standard library where
    orjson refuses what JSON allows (a lone surrogate's escape, which a page can hold),
    its result walked for its depth.
    """
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if "depth" in str(exc):
            raise PayloadError(400, _too_deep(max_depth)) from None
        return _stdlib_parse(text, max_depth)
    if not depth_within(text, max_depth):
        raise PayloadError(400, _too_deep(max_depth))
    return data


# The bytes that are not brackets, and braces read as brackets.
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_AS_BRACKETS = bytes.maketrans(b"{}", b"[]")
# Bracket bytes times levels past which the byte passes below cost more than one more
# parse of the text by orjson inside added arrays.
_PASSES_BUDGET = 2_000_000


def depth_within(text: bytes, max_depth: int) -> bool:
    """Whether valid JSON nests at most `max_depth` arrays and objects.

    Written by hand, in bytes methods (C loops): walking the parsed value in Python
    cost four times the parse. The escapes that can hide a quote are dropped (an escaped
    backslash first, so `\\"` keeps its quote), the strings with them (every other
    piece between quotes), and what is left reduced to its brackets; each pass removes
    the innermost pairs, so the passes count the depth. A text with few brackets is not
    looked at; one whose passes would cost more is parsed once more by orjson inside
    1,024 - `max_depth` added arrays, where its own limit refuses exactly the deeper."""
    if text.count(b"[") + text.count(b"{") <= max_depth:
        return True
    outside = b"".join(text.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')[::2])
    brackets = outside.translate(_AS_BRACKETS, _NOT_BRACKETS)
    if len(brackets) * max_depth > _PASSES_BUDGET:
        pad = ORJSON_DEPTH - max_depth
        try:
            orjson.loads(b"[" * pad + text + b"]" * pad)
        except orjson.JSONDecodeError:  # the text alone parses: only its depth can fail
            return False
        return True
    for _ in range(max_depth):
        if not brackets:
            return True
        brackets = brackets.replace(b"[]", b"")
    return not brackets


def _stdlib_parse(text: bytes, max_depth: int) -> Any:
    try:
        data = json.loads(text)
    except RecursionError:
        raise PayloadError(400, _too_deep(max_depth)) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise PayloadError(400, f"not JSON ({exc})") from None
    if depth_exceeds(data, max_depth):
        raise PayloadError(400, _too_deep(max_depth))
    return data


def _too_deep(max_depth: int) -> str:
    return f"nested deeper than {max_depth} levels of arrays and objects"


def depth_exceeds(data: Any, limit: int) -> bool:
    """Whether parsed JSON nests arrays and objects more than `limit` levels (iterative:
    the check itself never reaches the recursion limit)."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        level += 1
        if level > limit:
            return True
        stack.extend((child, level) for child in item if isinstance(child, dict | list))
    return False
