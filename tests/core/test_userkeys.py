"""The `<userkey:…>` path converter: every key round-trips through one path segment."""

from __future__ import annotations

import re
import uuid

import pytest
from django.urls import Resolver404, resolve, reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from sessions_app.foundation.core.userkeys import UserKeyConverter
from tests.support.hypothesis import examples

SITE = uuid.UUID("00000000-0000-4000-8000-000000000001")
CONVERTER = UserKeyConverter()
# What a segment may hold: the plain alphabet, or "~" and base64url. Nothing that
# Django's reverse() would percent-encode, and nothing a proxy or browser rewrites.
SEGMENT = re.compile(r"[A-Za-z0-9._@+-]+|~[A-Za-z0-9_-]*")


@settings(max_examples=examples(2000), deadline=None)
@given(st.text(min_size=1, max_size=256))
def test_any_key_round_trips_through_a_segment_without_a_slash(key: str) -> None:
    segment = CONVERTER.to_url(key)
    assert "/" not in segment and segment not in (".", "..")
    assert SEGMENT.fullmatch(segment), segment
    assert CONVERTER.to_python(segment) == key


@settings(max_examples=examples(300), deadline=None)
@given(st.text(min_size=1, max_size=256))
def test_reverse_then_resolve_gives_the_same_key(key: str) -> None:
    for name in ("sessions_app:user-profile", "sessions_app:activity", "api-activity-export"):
        url = reverse(name, args=[SITE, key])
        match = resolve(url)
        assert match.kwargs == {"site_id": SITE, "user_key": key}, url


@pytest.mark.parametrize(
    ("key", "segment"),
    [
        ("plain-key", "plain-key"),
        ("ana@shop.example", "ana@shop.example"),
        ("a+b_c.d", "a+b_c.d"),
        ("org/123", "~b3JnLzEyMw"),
        ("..", "~Li4"),
        (".", "~Lg"),
        ("~tilde", "~fnRpbGRl"),
        ("with space", "~d2l0aCBzcGFjZQ"),
        ("back\\slash", "~YmFja1xzbGFzaA"),
        ("Zoë/ünïcode", "~Wm_Dqy_DvG7Dr2NvZGU"),
    ],
)
def test_readable_keys_stay_readable_and_others_are_encoded(key: str, segment: str) -> None:
    assert CONVERTER.to_url(key) == segment
    assert CONVERTER.to_python(segment) == key


@pytest.mark.parametrize(
    "segment",
    [
        "~Q",  # a length no base64 has
        "~QR",  # unused low bits set: not the canonical spelling of "A"
        "~a+b",  # standard base64, not base64url
        "~QQ==",  # padded
        "~_w",  # 0xff: not UTF-8
        "~gA",  # a lone continuation byte
    ],
)
def test_segments_that_do_not_decode_are_refused(segment: str) -> None:
    with pytest.raises(ValueError):
        CONVERTER.to_python(segment)
    with pytest.raises(Resolver404):
        resolve(f"/sites/{SITE}/users/{segment}/")


def test_other_segments_are_taken_literally() -> None:
    """What a client percent-encoded arrives decoded (WSGI): the key as it is."""
    assert CONVERTER.to_python("with space") == "with space"
    assert CONVERTER.to_python("100%") == "100%"
    assert resolve(f"/api/sites/{SITE}/users/a?b#c/sessions").kwargs["user_key"] == "a?b#c"
