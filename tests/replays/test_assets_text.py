"""The collector takes stylesheets out of a chunk's JSON text (replays/assets.
assets_split_text, a byte search) exactly as the walk of the parsed events does."""

from __future__ import annotations

import copy
import gzip
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from bench.replay import RECORDING
from sessions_app.features.replays import assets
from tests.support.hypothesis import examples

css = st.text(min_size=0, max_size=1_500).map(lambda t: "a{b:c}" + t)


def _both(body: dict) -> tuple[tuple[object, dict], tuple[object, dict]]:
    walked = copy.deepcopy(body)
    found = assets.assets_split(walked["events"])
    for separators in ((",", ":"), (", ", ": ")):
        for ascii_only in (True, False):
            dumped = json.dumps(body, separators=separators, ensure_ascii=ascii_only)
            text = dumped.encode("utf-8", "surrogatepass")
            slim, by_text = assets.assets_split_text(text)
            assert (json.loads(slim), by_text) == (walked, found)
    return (walked, found), (json.loads(slim), by_text)


def test_the_demo_recording_is_split_as_the_walk_splits_it():
    recorded = json.loads(gzip.decompress(RECORDING.read_bytes()))
    shared = 0
    for body in recorded:
        (_, found), _ = _both(body)
        shared += len(found)
    assert shared >= 3  # the shop's stylesheet, once a page load


@settings(max_examples=examples(200), deadline=None)
@given(sheets=st.lists(css, min_size=1, max_size=3), quote=st.booleans())
def test_any_stylesheet_text_is_split_as_the_walk_splits_it(sheets, quote):
    """Escapes, quotes, non-ASCII and lone surrogates in the stylesheet; short ones stay."""
    nodes = [
        {"type": 2, "tagName": "style", "attributes": {"_cssText": s + ('"\\' if quote else "")}}
        for s in sheets
    ]
    body = {"events": [{"type": 2, "timestamp": 1, "data": {"node": {"childNodes": nodes}}}]}
    _both(body)


def test_a_lone_surrogate_is_hashed_as_the_walk_hashes_it():
    sheet = "a{content:'\ud800'}" + "x" * 2_000
    body = {"events": [{"type": 2, "data": {"attributes": {"_cssText": sheet}}}]}
    (_, found), _ = _both(body)
    assert list(found.values()) == [sheet]
