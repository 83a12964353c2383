"""The API's JSON: orjson with UTC times as `Z` (datetimes, UUIDs; ~10x faster than the stdlib).

One encoder for the API's renderer, the timeline's stored copies and the event
documents the collector writes (session_events.doc), so all three give the same
bytes. Importable without Django settings (the raw-driver benchmark imports the
writer).
"""

from __future__ import annotations

from typing import Any

import orjson

OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS


def dumps(data: Any) -> bytes:
    """Return the API's JSON for data (what api.renderers.ORJSONRenderer renders). A lone
    surrogate (half a UTF-16 pair: a page's text can hold one, JSON's escapes carry it)
    is not UTF-8: it is written as U+FFFD, the rest as it is."""
    try:
        return orjson.dumps(data, option=OPTIONS)
    except TypeError:
        return orjson.dumps(_scrubbed(data), option=OPTIONS)  # raises on anything else


def _scrubbed(data: Any) -> Any:
    """data with each lone surrogate of its strings (and keys) replaced by U+FFFD (two
    halves of a pair side by side become their character)."""
    if isinstance(data, str):
        return data.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(data, dict):
        return {_scrubbed(k): _scrubbed(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_scrubbed(v) for v in data]
    return data
