"""Drop secret-looking URL parameters from every event before it is logged or stored.

The tracker's rules (`redact` in static/sessions_app/tracker.js, docs/tracker.md) applied
on the server to every source, so a Segment SDK, a server-side caller or an old tracker
cannot put `?token=…` or `#access_token=…` into any table: a query or fragment parameter
whose name ends like a secret, or is in the site's `redact_params` ("-name" there keeps
one), goes with its value and separator. The pipeline cleans each validated event (its
url, referrer and every URL inside element, context and props, where Segment's
context.page, properties and traits land) and the raw payload of each rejected one: a
string under a URL-named key (url, referrer, href, path, search …) or one that starts
with http(s)://, at any depth.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from functools import lru_cache
from typing import Any

from sessions_app.domain.ingest.validation import ValidEvent

# The tracker's SECRET, ASCII like JavaScript's \w; \Z: JavaScript's $ ignores a final newline.
SECRET = re.compile(
    r"(token|key|secret|pass\w*|pwd|auth|code|sess\w*|sid|sig(nature)?|jwt|otp)\Z",
    re.IGNORECASE | re.ASCII,
)
_PARAM = re.compile(r"([?&#])([^?&#=]+)=[^&#]*")
TIDY = re.compile(r"[?&#]+\Z|[?&]+(?=#)|([?&#])&+")
_URL_KEY = re.compile(r"(url|uri|href|referr?er|link|path|search|location)\Z", re.IGNORECASE)
# Deeper containers than any valid event has (props nest 3 levels) become this text if
# they hold a parameter: the event is rejected anyway, and its stored payload is clean.
MAX_DEPTH = 16
TOO_DEEP = "(nested too deep)"


class Redactor:
    """The parameters one site drops: the defaults, plus its own names, minus its "-name"s."""

    def __init__(self, names: tuple[str, ...] = ()) -> None:
        self.names = frozenset(n.lower() for n in names)
        # Pages repeat their parameter names (utm_source, page …): each is tested once.
        self.dropped = lru_cache(maxsize=4096)(self._dropped)

    def _dropped(self, name: str) -> bool:
        """Whether a parameter of this name is dropped (the tracker's test, word for word)."""
        name = name.lower()
        return f"-{name}" not in self.names and (
            SECRET.search(name) is not None or name in self.names
        )

    def url(self, text: str) -> str:
        """Return text without its secret query and fragment parameters (tracker.js `redact`).

        A URL that loses no parameter is returned as it is (the tracker would still tidy
        separators left empty, `?&` or a final `?`: nothing secret).
        """
        if "?" not in text and "#" not in text and "&" not in text:  # the usual URL: no
            return text  # parameter to parse (the tracker takes "&" for a separator anywhere)
        if not any(self.dropped(m[2]) for m in _PARAM.finditer(text)):
            return text
        return TIDY.sub(r"\1", _PARAM.sub(self._param, text))

    def _param(self, match: re.Match[str]) -> str:
        return match[1] if self.dropped(match[2]) else match[0]

    def valid(self, event: ValidEvent) -> ValidEvent:
        """Return a validated event without secrets in its URL fields (itself if it had none).

        Only what validation kept can be stored: url, referrer, a title that is a URL and
        the strings of element, context and props (Segment's context.page and properties).
        """
        changes: dict[str, Any] = {}
        for name in ("url", "referrer", "title"):  # a title only if it is a URL
            value = getattr(event, name)
            if value is not None and (clean := self._text(value, name)) is not value:
                changes[name] = clean
        for name in ("element", "context", "props"):
            value = getattr(event, name)
            if value is not None and (clean := self._walk(value, 0)) is not value:
                changes[name] = clean
        return replace(event, **changes) if changes else event

    def payload(self, raw: Any) -> Any:
        """Return a raw event (kept when rejected) with every URL in it redacted, at any depth."""
        return self._walk([raw], -1)[0]

    def _text(self, value: str, key: Any) -> str:
        if "?" not in value and "#" not in value and "&" not in value:
            return value
        if (isinstance(key, str) and _URL_KEY.search(key)) or value[:8].lower().startswith(
            ("http://", "https://")
        ):
            return self.url(value)
        return value

    def _walk(self, value: Any, depth: int, key: Any = None) -> Any:
        """The container with its URLs redacted: itself when none changed (the usual case)."""
        if not isinstance(value, dict | list):
            return value
        if depth >= MAX_DEPTH:
            return value if _no_parameter(value) else TOO_DEEP
        pairs = value.items() if isinstance(value, dict) else enumerate(value)
        changed: Any = None
        for name, item in pairs:
            if isinstance(item, str):
                if "?" not in item and "#" not in item and "&" not in item:
                    continue  # the quick check: most strings have no parameter at all
                new = self._text(item, key if isinstance(name, int) else name)
            elif isinstance(item, dict | list):
                new = self._walk(item, depth + 1, key if isinstance(name, int) else name)
            else:
                continue
            if new is not item:
                if changed is None:
                    changed = value.copy()
                changed[name] = new
        return value if changed is None else changed


def _no_parameter(value: Any) -> bool:
    """Whether a deep container holds no text with a parameter separator (kept as it is)."""
    try:
        text = json.dumps(value, default=str)
    except (RecursionError, TypeError, ValueError):
        return False
    return "?" not in text and "#" not in text and "&" not in text


@lru_cache(maxsize=256)
def redactor(names: tuple[str, ...] = ()) -> Redactor:
    """Return the redactor of a site's `redact_params` (cached: built once per list)."""
    return Redactor(names)
