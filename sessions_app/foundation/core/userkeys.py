"""User keys in URL paths: the `<userkey:user_key>` path converter.

A user key (a user_id, else an anonymous_id) is whatever the tracker or a Segment
library sent: it may hold "/", "?", "#", "%", spaces, quotes or any letter. In a
path it is written one of two ways:

- plain, when it is made only of ``A-Z a-z 0-9 . _ @ + -``, is not "." or "..", and
  does not start with "~" (``anon-1``, ``ana@shop.example``);
- otherwise "~" and the unpadded base64url of its UTF-8 bytes (``org/123`` is
  ``~b3JnLzEyMw``).

The encoded form holds no "/", "\\", "%" or dot segment, so nothing between the
browser and Django (a proxy decoding %2F, a browser turning "\\" into "/", path
normalization) can change which user a link names. Reading a path, "~…" is decoded
(invalid base64 or UTF-8: no match, so a 404) and anything else is the key itself,
after the server has percent-decoded the path: an API client may also send a key
without "/" percent-encoded.
"""

from __future__ import annotations

import base64
import binascii
import re

from django.urls import register_converter
from django.urls.converters import get_converters

NAME = "userkey"
PREFIX = "~"
_PLAIN = re.compile(r"[A-Za-z0-9._@+-]+")
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")
# The API schema's words for it (every user_key path parameter).
DESCRIPTION = (
    "The user's user_id, else anonymous_id. A key made only of A-Z a-z 0-9 . _ @ + - "
    '(and not "." or "..", and not starting with "~") is written as it is; any other '
    'key as "~" followed by the unpadded base64url of its UTF-8 bytes: `org/123` is '
    '`~b3JnLzEyMw`. Any key may be sent in the "~" form. A key without "/" may also be '
    'sent percent-encoded (`with%20space`), unless it starts with "~".'
)


def is_plain(key: str) -> bool:
    """True if the key goes into a path as it is."""
    return (
        _PLAIN.fullmatch(key) is not None
        and key not in (".", "..")
        and not key.startswith(PREFIX)  # "~" is outside _PLAIN; kept explicit
    )


def to_path(key: str) -> str:
    """The path segment for a key: the key itself, or "~" + unpadded base64url."""
    if is_plain(key):
        return key
    encoded = base64.urlsafe_b64encode(key.encode("utf-8")).rstrip(b"=")
    return PREFIX + encoded.decode("ascii")


def from_path(segment: str) -> str:
    """The key a path segment names; ValueError if a "~" segment does not decode."""
    if not segment.startswith(PREFIX):
        return segment
    encoded = segment[len(PREFIX) :]
    if not _BASE64URL.fullmatch(encoded) or len(encoded) % 4 == 1:
        raise ValueError("not unpadded base64url")
    try:
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except binascii.Error as exc:
        raise ValueError("not unpadded base64url") from exc
    if base64.urlsafe_b64encode(raw).rstrip(b"=") != encoded.encode("ascii"):
        # the last character's unused low bits were set: each key has one encoding
        raise ValueError("not canonical base64url")
    return raw.decode("utf-8")  # UnicodeDecodeError is a ValueError


class UserKeyConverter:
    """`<userkey:user_key>`: see the module docstring for how a key is written."""

    regex = r"[^/]+"

    def to_python(self, value: str) -> str:
        return from_path(value)

    def to_url(self, value: str) -> str:
        return to_path(value)


def register() -> None:
    """Register `userkey` once (features/users/urls.py calls this before its patterns)."""
    if NAME not in get_converters():
        register_converter(UserKeyConverter, NAME)
