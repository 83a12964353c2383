"""Transaction-log payloads: what the encoder writes, the decoder reads back."""

from __future__ import annotations

import base64
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from sessions_app.domain.ingest.plan import EventRow, Plan, SessionSummary, plan_decode, plan_encode
from sessions_app.domain.ingest.state import SessionState
from sessions_app.foundation.core.timebuckets import EPOCH
from tests.support.hypothesis import examples

SITE = uuid.UUID("0f6b2a4e-3c1d-4e5f-8a9b-0c1d2e3f4a5b")
SESSION = uuid.UUID("7c9e6679-e605-11f1-9d62-99cbae29d7a6")
T = datetime(2026, 11, 21, 23, 59, 58, 123000, tzinfo=UTC)
VERSION = 1763769598123000
# A payload of the current encoder: entries in the log are decoded by whichever release
# replays them, so a change of format must keep reading this (or bump "v" and say how).
GOLDEN = (
    "eAHNVEtu2zAUvErAbSVblKwPDRQF+jlBl0EgUNRzLFi/kpRjwzDQO/QUvUN2vklP0qHkJEYRtMmq2RggNc/vcWbeHNiW"
    "LbnHTGUpr0q2ZMEqKUK5ID9SvPQXFK/8TIrCD3AMKVotZFwwjxXSqvVUEQULoeIo9CkJYp/zFfdFmYS+EKqQFIoylQkq"
    "NCmqtlTm0qJlKuIoiGOR8TDy2Ja0qbrW3SdRmojpPggCj9GWWmvY8vrw+iEHQzrf0B7Pkm3X+qd7zGHIuF7T7KkSlCSp"
    "+Mfs4xBTRVYKIknJRYUUPPPDMiWxKOMiowxd7L4ntO3lLW0runM3eMQfzx50Dcza2t4s53Oz7voZ7WTT1zQ/3X/49p67"
    "ssrW7p8+ydXp59Wv7z+uvgLn3rGWGoJFR+9tMZO+jBlVV2rzalpQQDU1sARbHpiVt2CmGKyFdzymammgLrzCJI4FuwF9"
    "tAOUfRz27OixWlpwafVAI7rpCQxOx8rkRQfodDqTG7w1crMXkjsY2zXPs9vKZnTmoNVaGgJI04q0Jn3hRVw9WhGIXnc9"
    "eD2wrawHVAsxiz2GfcXuFhVE4PQuxLK2ZKyj9AABltfca4e69hyjN0ew/0gqdDlv4f9ebGOlxsTPZRLMZHND1D730cXJ"
    "vukGM4XCU7qMkTMG6eC79Z2SQ3WDcyzYegiE/HyF7B034eIMc+t9/pJsoF1l/wZEf9W1CNdRlLPP+7yHutUOaodBNAtm"
    "nOMX0BJJpZw1SjIbO2bMOKR2+fn5CxCmg2kcoqU7U5O18MwRYtZVu3FKXrPp0Q903DihXUzhIz/+Bhk190M="
)

# An entry logged while session states still carried the user-agent string (no longer
# kept; the decoder drops it), without dimensions.
LOGGED_WITH_USER_AGENT = (
    "eAHNVEtu2zAQvUrAbSVblKwPDRQF2nVXXQaBQEnjmDAtqSTl2jUM9A49Re+QXW7Sk/RRctKgCFpn1WwEzHBGM/Pm"
    "zTuyHVvygFnlqFQNW7JolVWxXFCY1LwJF5SuwkKKKoxgxpSsFjKtWMAq6er1lJFEC1GnSRxSFqUh5yseiiaLQyHq"
    "SlIsmlxmyDBUk9pRU0qHkrlIkyhNRcHjJGA7MlZ1rfdnSZ6JyR9FUcBoR62zbHl9fHmTgyVTbuiAsWTbteH9Hfqw"
    "ZH2tqfe8FpRlufhH72MTU0bRCCJJ2ZMMKXgRxk1OYtGkVUEFqrhDTyjby1vaKfriPRjij7EHoxGzdq63y/ncrrt+"
    "Rnu57TXN7+/efX7LfZpy2v/pg1zd/7j6+e371SfE+TnW0mBhySl4XcjklyFTa1VvXgwLEkjTFpRgyyNz8hbIVINz"
    "4E7Aai0ttguuMAmzYjeAj/YIZe+HAzsFTEsHLJ0ZaIze9gQEJ1PZsuoQOllncKPXBm5xIbiDdd32eXRbuR2ZOZh6"
    "LS0hyNCKjCHzhItwPVIREb3peuB6ZDupB2QLMUsDhnvF7VYKS+D0JsaxtmSdh/SIBSyvedAOWgce0ZsT0H8EFXs5"
    "X+H/PmzrpEHHz2kSyORKS9Q+9+jl5LDtBjuJwm91GSVnFNIh9Oc7KUfdDZ6xQOtBEMqzC9o7XsITG+Q2h/ISbaC9"
    "cn8LRP26ayGu41ImZo8NQpV8P+xj91VpLefpLEKs6ssei1d7vMRRMotmnOPLTtiXVu3GL+uaTXM9THzjd+mVCI/8"
    "9AvESu1J"
)


def _plan() -> Plan:
    def event(n: str, kind: str, **extra) -> EventRow:
        event_id = uuid.UUID(f"8d9eeae{n}-e605-11f1-a918-2d7e94d5b8e8")
        return EventRow(SITE, "anon-ü", SESSION, event_id, kind, T, **extra)

    return Plan(
        site_id=SITE,
        batch_id=uuid.UUID("3049c532-e605-11f1-9d62-99cbae29d7a6"),
        received_at=T,
        version=VERSION,
        events=[
            event(
                "6", "pageview", url="https://shop.example/ü?q=1", title="Café \u2013 Shop", shard=3
            ),
            event(
                "7",
                "click",
                url="https://shop.example/",
                element={"tag": "button", "classes": ["a", "b"], "text": "Buy"},
                late=True,
                clamped=True,
                is_bot=True,
            ),
            event(
                "8",
                "custom",
                name="purchase",
                props={"value": 99.5, "n": 3, "big": 1e20, "nested": {"a": [1, None, True]}},
                referrer="https://ref.example/",
            ),
        ],
        sessions=[
            SessionSummary(
                SITE,
                "anon-ü",
                SessionState(
                    SESSION,
                    T,
                    T,
                    anonymous_id="anon-ü",
                    user_id="u-1",
                    event_count=3,
                    pageview_count=1,
                    click_count=1,
                    entry_url="https://shop.example/ü?q=1",
                    exit_url="https://shop.example/",
                    converted=True,
                    ip_prefix="203.0.113.0",
                    dimensions={"device": "desktop", "country": "DE", "source": "newsletter"},
                    version=VERSION,  # a summary is written at its plan's version
                ),
            )
        ],
        links=[("u-1", "anon-ü")],
    )


def test_the_golden_payload_decodes_and_the_encoder_still_writes_it() -> None:
    assert plan_decode(base64.b64decode(GOLDEN)) == _plan()
    assert plan_encode(_plan()) == base64.b64decode(GOLDEN)


def test_an_entry_with_the_user_agent_string_decodes_without_it() -> None:
    session = replace(_plan().sessions[0].state, dimensions={})
    [summary] = plan_decode(base64.b64decode(LOGGED_WITH_USER_AGENT)).sessions
    assert summary.state == session and not hasattr(summary.state, "user_agent")


def test_encode_then_decode_gives_the_plan_back() -> None:
    assert plan_decode(plan_encode(_plan())) == _plan()


chars = st.characters(exclude_categories=["Cs"])  # bodies with lone surrogates are refused
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(chars, max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(chars), inner, max_size=3),
    max_leaves=8,
)
optional_text = st.none() | st.text(chars, max_size=30)
times = st.integers(0, 10**13).map(lambda ms: EPOCH + timedelta(milliseconds=ms))


@st.composite
def plans(draw) -> Plan:
    session_id = uuid.uuid1()
    events = [
        EventRow(
            site_id=SITE,
            user_key=draw(st.text(chars, min_size=1, max_size=10)),
            session_id=session_id,
            event_id=uuid.uuid1(),
            type=draw(st.sampled_from(["pageview", "click", "custom"])),
            ts=draw(times),
            name=draw(optional_text),
            url=draw(optional_text),
            title=draw(optional_text),
            element=draw(
                st.none() | st.dictionaries(st.sampled_from(["tag", "id"]), st.text(chars))
            ),
            props=draw(st.none() | st.dictionaries(st.text(chars), json_values, max_size=4)),
            late=draw(st.booleans()),
            clamped=draw(st.booleans()),
            is_bot=draw(st.booleans()),
            shard=draw(st.integers(0, 63)),
        )
        for _ in range(draw(st.integers(0, 4)))
    ]
    return Plan(
        SITE,
        uuid.uuid1(),
        draw(times),
        draw(st.integers(0, 2**62)),
        events,
        [],
        [],
        shards=draw(st.integers(1, 64)),
    )


@settings(max_examples=examples(200), deadline=None)
@given(plan=plans())
def test_any_plan_survives_the_round_trip(plan: Plan) -> None:
    assert plan_decode(plan_encode(plan)) == plan


def test_a_backfilled_plan_keeps_when_it_was_logged_and_is_logged_under_that_minute() -> None:
    from sessions_app.domain.ingest.txlog import log_key

    received = datetime(2026, 3, 11, 8, 0, 1, 250_000, tzinfo=UTC)
    logged = datetime(2026, 3, 14, 15, 9, 26, 535_000, tzinfo=UTC)
    plan = Plan(site_id=uuid.uuid4(), batch_id=uuid.uuid1(), received_at=received, version=1)
    assert log_key(plan)[1] == datetime(2026, 3, 11, 8, 0, tzinfo=UTC)

    backfill = plan_decode(plan_encode(Plan(**{**vars(plan), "logged_at": logged})))

    assert (backfill.received_at, backfill.logged_at) == (received, logged)
    assert log_key(backfill)[1] == datetime(2026, 3, 14, 15, 0, tzinfo=UTC)
