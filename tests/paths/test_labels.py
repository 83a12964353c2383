"""A Sankey label fits the room before the next column (by the server's estimate; ui.js
fits it exactly in the browser: tests/e2e/test_paths.py): any page, any count."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sessions_app.features.paths.views import LABEL_ROOM, fit_label, text_px


@given(page=st.text(min_size=1, max_size=300), count=st.integers(0, 10**9))
def test_a_label_fits_and_keeps_both_ends_of_its_page(page, count):
    suffix = f" ({count:,})"
    label = fit_label(page, suffix)
    if text_px(page + suffix) <= LABEL_ROOM:
        assert label == page
        return
    assert text_px(label + suffix) <= LABEL_ROOM
    head, tail = label.split("…", 1) if "…" in label else ("", "")
    assert label.count("…") >= 1 and page.startswith(head) and page.endswith(tail)
    assert len(head) + len(tail) < len(page)


def test_a_long_path_keeps_its_last_segment():
    label = fit_label("/demo/products/a-very-long-product-name/espresso-machine", " (8)")
    assert label.startswith("/demo") and label.endswith("-machine")
    assert "…" in label
