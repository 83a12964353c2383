"""core/payloads: one gzip member within a cap; JSON within a depth, by orjson's own limit
inside added arrays, agreeing with the standard library's parse and an explicit walk."""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessions_app.foundation.core import payloads
from tests.support.hypothesis import examples

LIMIT = 8

# Strings full of what could confuse a byte scan: brackets, quotes, backslashes.
tricky = st.text(alphabet="[]{}\"\\'a:,", max_size=6) | st.text(max_size=5)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | tricky,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=30,
)


def _depth(value) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


@settings(max_examples=examples(300), deadline=None)
@given(value=json_values, wrap=st.integers(0, 4))
def test_json_is_parsed_as_the_standard_library_does_within_the_depth(value, wrap):
    text = ("[" * wrap + json.dumps(value) + "]" * wrap).encode()
    expected = json.loads(text)
    if _depth(expected) > LIMIT:
        with pytest.raises(payloads.PayloadError, match="nested deeper than 8 levels"):
            payloads.json_parse(text, max_depth=LIMIT)
    else:
        assert payloads.json_parse(text, max_depth=LIMIT) == expected
    assert payloads.depth_exceeds(expected, LIMIT) == (_depth(expected) > LIMIT)


@settings(max_examples=examples(500), deadline=None)
@given(value=json_values, limit=st.integers(0, 6), ascii_only=st.booleans())
def test_the_byte_scan_of_the_depth_agrees_with_the_parsed_value(value, limit, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only).encode()
    assert payloads.depth_within(text, limit) == (_depth(value) <= limit)


def test_a_text_too_big_for_the_byte_passes_is_measured_by_orjson():
    wide = b"[" + b",".join([b"[[1]]"] * 200_000) + b"]"  # 400,000 bracket pairs, depth 3
    assert len(wide) * 512 > 2_000_000
    assert payloads.depth_within(wide, 512) and payloads.depth_within(wide, 3)
    assert not payloads.depth_within(wide, 2)


@pytest.mark.parametrize(
    "text", [b"", b"1],[2", b"][", b"[]],[[", b"]", b'"a"]', b"[1]]", b"1 2", b"\xff", b'{"a": ']
)
def test_a_text_that_is_not_one_json_value_is_refused_even_inside_the_added_arrays(text):
    with pytest.raises(payloads.PayloadError, match="not JSON"):
        payloads.json_parse(text, max_depth=512)


def test_past_orjsons_limit_and_with_a_lone_surrogate_the_depth_still_holds():
    for depth in (513, 1_024, 1_025, 5_000):
        with pytest.raises(payloads.PayloadError, match="nested deeper than 512"):
            payloads.json_parse(b"[" * depth + b"]" * depth, max_depth=512)
    surrogate = b'{"x": "\\ud800", "y": ' + b"[" * 600 + b"]" * 600 + b"}"
    with pytest.raises(payloads.PayloadError, match="nested deeper than 512"):
        payloads.json_parse(surrogate, max_depth=512)
    assert payloads.json_parse(b'"\\ud800"', max_depth=512) == "\ud800"


def test_one_gzip_member_within_its_cap():
    body = gzip.compress(b"[1]")
    assert payloads.gzip_inflate(body, 10) == b"[1]"
    for bad, reason in (
        (body + b"GARBAGE", "bytes after the gzip stream"),
        (body + gzip.compress(b"[2]"), "bytes after the gzip stream"),
        (body[:-4], "truncated"),
        (b"not gzip", "invalid gzip body"),
    ):
        with pytest.raises(payloads.PayloadError, match=reason) as raised:
            payloads.gzip_inflate(bad, 10)
        assert raised.value.status == 400
    with pytest.raises(payloads.PayloadError, match="more than 10 bytes") as raised:
        payloads.gzip_inflate(gzip.compress(b"\x00" * 10**6), 10)
    assert raised.value.status == 413
