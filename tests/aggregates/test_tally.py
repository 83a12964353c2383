"""Per-batch tallies (bucket_partials): a seal merges them instead of scanning raw rows.

The property that matters: sealing an hour from its tallies writes exactly what
sealing it from its raw rows writes. The real-node tests also prove which source a
seal read (by deleting the other) and that replays and erasures keep it true.
"""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from hypothesis import given, settings
from hypothesis import strategies as st

from sessions_app.domain.aggregates import seal, tally, totals
from sessions_app.domain.aggregates.stored import bucket_user_counts
from sessions_app.domain.erasure import erasures
from sessions_app.domain.ingest import plan_writes, rows
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ingest.plan import Plan, plan_decode, plan_encode
from sessions_app.domain.ingest.steps import apply as apply_step
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.models import BucketState, ErasureRequest, Site
from tests.support.events import event
from tests.support.hypothesis import examples
from tests.support.sealing import bucket_aggregate, sealed

# --- pure: tallies add up ------------------------------------------------------------

HOUR = datetime(2026, 11, 20, 10, tzinfo=UTC)
SESSIONS = [uuid.UUID(int=n) for n in range(1, 6)]

raw_events = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["pageview", "click", "custom"]),
            "user_key": st.sampled_from(["a", "b", "c", "bot"]),
            "session_id": st.sampled_from(SESSIONS),
            "ts": st.integers(0, 3_599_999).map(lambda ms: HOUR + timedelta(milliseconds=ms)),
            "name": st.sampled_from([None, "purchase", "signup"]),
            "url": st.sampled_from([None, "", "https://x.example/", "https://x.example/p?q=1"]),
            "element": st.sampled_from(
                [None, {"tag": "a"}, {"text": "Buy", "tag": "button"}, {"selector": "#go"}]
            ),
            "is_bot": st.booleans(),
        }
    ),
    max_size=40,
)


@settings(max_examples=examples(300), deadline=None)
@given(events=raw_events, cuts=st.lists(st.integers(0, 40), max_size=4))
def test_stored_tallies_of_the_parts_finish_like_the_whole(events, cuts):
    # One session belongs to one user, as the collector makes it.
    for e in events:
        e["session_id"] = SESSIONS[["a", "b", "c", "bot"].index(e["user_key"])]
    bounds = sorted({0, len(events), *(c for c in cuts if c <= len(events))})
    parts = [events[a:b] for a, b in itertools.pairwise(bounds)]
    stored = [tally.tally_encode(tally.tally(p)) for p in parts]

    whole_tally, merged_tally = tally.tally(events), tally.tally_fold(stored)
    whole = totals.finish(whole_tally)
    merged = totals.finish(merged_tally)

    assert merged == whole
    assert merged_tally.users == whole_tally.users
    assert merged_tally.humans == whole_tally.humans
    assert merged_tally.views.keys() == whole_tally.views.keys()
    assert {k: sorted(v) for k, v in merged_tally.views.items()} == {
        k: sorted(v) for k, v in whole_tally.views.items()
    }


def test_a_tally_leaves_its_empty_parts_out_and_folds_as_with_them_written():
    """A batch of page views has no clicks, custom events, heat, vitals or goals: they are
    not written (a seal decodes tens of thousands of tallies); a tally written with every
    part, empty ones too (the releases before), folds to the same counts."""
    events = [
        {
            "type": "pageview",
            "user_key": "a",
            "session_id": SESSIONS[0],
            "event_id": uuid.uuid1(),
            "ts": HOUR,
            "url": "https://x.example/p",
        },
    ]
    lean = tally.tally_encode(tally.tally(events))
    body = orjson.loads(lean)
    assert set(body) == {"v", "rows", "type", "pages", "users", "humans", "views"}
    whole = {
        **body,
        "name": {},
        "clicks": {},
        "heat": {"pages": {}, "readings": {}},
        "starts": {},
        "vitals": {},
        "goals": {"checked": [], "found": {}},
    }
    assert tally.tally_fold([lean]) == tally.tally_fold([orjson.dumps(whole)])
    assert tally.tally_fold([lean, lean]).pages == {"/p": 2}


def test_a_tally_written_by_the_release_before_folds_with_the_new_ones():
    """Tallies of the hour being written when a release rolls out: the earlier format
    (per-session spans, page views as [event id, path]) folds beside the current one."""
    view = uuid.uuid1()
    earlier = {
        "v": 1,
        "rows": 2,
        "type": {"pageview": 2},
        "name": {},
        "pages": {"/a": 2},
        "clicks": {},
        "users": {"old": {"pageview": 2}},
        "spans": {str(SESSIONS[0]): ["old", 1, 2, 2, 2]},
        "views": {str(SESSIONS[0]): [[str(view), "/a"]]},
        "heat": {"pages": {}, "readings": {}},
        "starts": {},
    }
    current = tally.tally_encode(
        tally.tally(
            [
                {
                    "type": "pageview",
                    "user_key": "new",
                    "session_id": SESSIONS[1],
                    "event_id": uuid.uuid1(),
                    "ts": HOUR,
                    "url": "https://x.example/b",
                }
            ]
        )
    )
    folded = tally.tally_fold([orjson.dumps(earlier), current])
    assert folded.humans == {"old", "new"}
    assert folded.users == {"old": {"pageview": 2}, "new": {"pageview": 1}}
    assert folded.views[str(SESSIONS[0])] == [[*tally.view_key(view), "/a"]]
    assert [v[2] for v in folded.views[str(SESSIONS[1])]] == ["/b"]


def test_tallies_that_share_an_event_are_told_apart():
    a, b, c = uuid.uuid1(), uuid.uuid1(), uuid.uuid1()
    assert tally.digests_disjoint([tally.ids_digest([a, b]), tally.ids_digest([c])])
    assert tally.digests_disjoint([])
    assert not tally.digests_disjoint([tally.ids_digest([a, b]), tally.ids_digest([c, a])])
    assert not tally.digests_disjoint([tally.ids_digest([b, b])])
    assert not tally.digests_disjoint([tally.ids_digest([a]), None])  # written before digests


# --- on the real node ------------------------------------------------------------------

pytestmark_db = pytest.mark.django_db(databases=["default", "cassandra"])

SELECT_PARTIALS = """
SELECT batch_id, events FROM {ks}.bucket_partials WHERE site_id = ? AND bucket = ? AND shard = ?
"""
DELETE_RAW = "DELETE FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ?"


def _partials(site: Site, hour: datetime) -> list[dict]:
    shards = BucketState.objects.get(site=site, granularity="hour", bucket=hour).shards
    return [
        dict(row)
        for shard in range(shards)
        for row in cassandra_session().execute(prepare(SELECT_PARTIALS), (site.id, hour, shard))
    ]


@pytestmark_db
def test_a_seal_from_tallies_writes_what_a_scan_of_the_raw_rows_writes(site, busy_hour):
    hour = busy_hour
    partials = _partials(site, hour)
    # One row per batch of the hour (14 beacons), counting every event, bots too.
    assert len(partials) == 14 and sum(p["events"] for p in partials) == 4 * 3 * 3 + 2 + 1
    assert len(_partials(site, hour + timedelta(hours=1))) == 1

    scanned = sealed(site, hour, from_tallies=False)
    merged = sealed(site, hour, from_tallies=True)

    assert merged == scanned
    agg, counts = merged
    assert agg["events"] == 37 and agg["rows_read"] == 39
    # v1's three purchases (the site's goal) are one converted visit
    assert agg["conversions"] == 1 and agg["users"] == 4
    assert agg["sessions_started"] == 5  # v0 came back after 53 minutes: a new session
    assert "pageview" in counts["bot"] and counts["v0"]["pageview"] == 4


@pytestmark_db
def test_the_seal_reads_the_tallies_and_not_the_raw_rows(site, busy_hour):
    hour = busy_hour
    expected = sealed(site, hour, from_tallies=True)
    shards = BucketState.objects.get(site=site, granularity="hour", bucket=hour).shards
    for shard in range(shards):
        cassandra_session().execute(prepare(DELETE_RAW), (site.id, hour, shard))

    # Without its raw rows, the hour still seals the same from its tallies ...
    assert sealed(site, hour, from_tallies=True) == expected
    # ... and a scan finds nothing: the tallies were what the seal read.
    agg, _ = sealed(site, hour, from_tallies=False)
    assert agg["events"] == agg["rows_read"] == agg["users"] == 0


@pytestmark_db
def test_replayed_and_requeued_plans_overwrite_their_own_tallies(site, monkeypatch):
    hour = timebuckets.floor(timezone.now() - timedelta(hours=3), "hour")
    applied: list[Plan] = []
    original = apply_step.plan_apply

    def keep(plan, **kwargs):
        applied.append(plan)
        return original(plan, **kwargs)

    monkeypatch.setattr(apply_step, "plan_apply", keep)
    t = hour + timedelta(minutes=10)
    events_record(
        source=Source(site=site, received_at=hour + timedelta(minutes=20)),
        raw_events=[event(t), event(t + timedelta(minutes=1), kind="click")],
    )
    [plan] = applied
    first = sealed(site, hour, from_tallies=True)

    # The redo task (plan_apply) and the applier (plans_apply) write the same plan again.
    plan_writes.plan_apply(plan_decode(plan_encode(plan)))
    plan_writes.plans_apply([plan, plan])

    assert [p["events"] for p in _partials(site, hour)] == [2]
    assert sealed(site, hour, from_tallies=True) == first


@pytestmark_db
def test_a_plan_keeps_its_tally_shard_through_the_log(site):
    Site.objects.filter(pk=site.pk).update(event_shards=5)
    site.refresh_from_db()
    hour = timebuckets.floor(timezone.now() - timedelta(hours=3), "hour")
    outcome = events_record(
        source=Source(site=site, received_at=hour + timedelta(minutes=20)),
        raw_events=[event(hour + timedelta(minutes=10))],
    )
    shard = rows.partial_shard(outcome.batch_id, 5)
    state = BucketState.objects.get(site=site, granularity="hour", bucket=hour)
    # The hour records the tally's shard, so the seal's fan-out reaches it.
    assert state.shards >= shard + 1
    [row] = cassandra_session().execute(prepare(SELECT_PARTIALS), (site.id, hour, shard))
    assert row["batch_id"] == outcome.batch_id


@pytest.mark.django_db(transaction=True, databases=["default", "cassandra"])
def test_an_erasure_deletes_the_hours_tallies_and_reseals_from_raw_rows(site, busy_hour, settings):
    settings.ERASURE_SETTLE_SECONDS = 0
    settings.SUPPRESSION_CACHE_SECONDS = 0
    hour = busy_hour
    seal.bucket_seal(site_id=site.id, hour=hour, now=timezone.now())
    admin = get_user_model().objects.create_superuser("root", password="pw-root-123")
    request = erasures.erasure_request(
        site=site, key="v1", kind=ErasureRequest.ANONYMOUS_ID, requested_by=admin
    )
    done = erasures.user_erase(request_id=request.pk, now=timezone.now())

    assert done.state == ErasureRequest.DONE and done.counts["bucket_partials"] >= 3
    assert _partials(site, hour) == []
    state = BucketState.objects.get(site=site, granularity="hour", bucket=hour)
    assert state.partials is False and state.state == BucketState.SEALED
    agg = bucket_aggregate(site_id=site.id, granularity="hour", bucket=hour)
    assert agg["events"] == 37 - 9 and agg["conversions"] == 0 and agg["users"] == 3
    counts = bucket_user_counts(site_id=site.id, granularity="hour", bucket_starts=[hour])
    assert "v1" not in counts and counts
