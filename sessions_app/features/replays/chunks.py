"""The replay collector's checks and write: one recorder chunk (POST /replay).

A chunk is the recorder's JSON (static/sessions_app/replay.js), gzip-compressed in the
page (a plain JSON body is compressed here):

    {"site": "cs_…", "chunk": uuid, "seq": n, "page": ms, "start": ms, "end": ms,
     "sent_at": ms, "anonymous_id": "…", "user_id": "…"?, "last_event": uuid?,
     "events": [rrweb event, …]}

`page` is when the page load's recording started (its chunks are numbered by `seq` from
0); `last_event` the tracker's newest event id when the chunk was cut, so the click path
and the replay line up. The session is the visitor's session covering the chunk's
start (the tracker's events name it: the Redis state, else user_sessions); none yet is
a 409 the recorder retries. The stored row is the compressed body as it came (one
gzip member, the one checked: nothing after it is accepted), or, when it inlines
stylesheets of at least assets.MIN_BYTES, the body with references to them (stored once
per site in replay_assets), compressed again. A chunk id is claimed once per session; a
claimed one writes nothing; every stored byte is counted against the session's and the
site's day's budgets first (docs/replay.md, Wire format and limits).
"""

from __future__ import annotations

import gzip
import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from django.conf import settings
from redis.exceptions import RedisError

from sessions_app.domain.ingest.state import SessionState, state_key
from sessions_app.domain.ledger.suppression import suppressed_keys
from sessions_app.features.replays import assets
from sessions_app.features.replays.marks import marked_key, replay_mark
from sessions_app.foundation.core import payloads, timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.ids import time_uuid
from sessions_app.foundation.core.redis_client import redis_client
from sessions_app.foundation.models import Site
from sessions_app.foundation.tables import ingest_stats, replay_chunks, user_sessions

GZIP_MAGIC = b"\x1f\x8b"
# Chunks of one page load: the recorder cuts one every 5 s and when the page is hidden,
# so REPLAY_MAX_SESSION_MINUTES (120) of recording is about 1,440 of them.
MAX_SEQ = 5_000
MAX_ID = 256  # anonymous_id and user_id, as the tracker clips them
# A tab's dropped-chunk count as one chunk reports it: counted up to this (a tab makes
# one chunk every 5 s, 720 in an hour offline); more is accepted and counted as this.
MAX_DROPPED = 1_000
HISTORY = 20  # the visitor's recent sessions read when Redis has no covering state
MAX_SKEW = timedelta(days=1)  # a client clock further off is not corrected


class ChunkError(Exception):
    """A rejected chunk: HTTP status, the field at fault, a reason."""

    def __init__(self, status: int, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.status = status
        self.field = field

    def as_dict(self) -> dict[str, str]:
        return {"error": str(self), "field": self.field}


@dataclass(frozen=True)
class Chunk:
    """A chunk's checked fields (the events stay in `data`, compressed)."""

    chunk_id: uuid.UUID
    seq: int
    page: datetime
    start: datetime
    end: datetime
    user_key: str
    last_event: uuid.UUID | None
    events: int
    data: bytes  # gzip of the chunk's JSON
    dropped: int = 0  # chunks the tab's retry queue dropped since its last report


def inflate(body: bytes) -> tuple[bytes, bytes]:
    """Return (gzip body, JSON text): a gzip body of one member is inflated (bounded), a
    JSON one compressed. What is stored is the member checked here, nothing after it."""
    if not body:
        raise ChunkError(400, "body", "empty; send the recorder's chunk")
    if len(body) > settings.REPLAY_MAX_CHUNK_BYTES:
        raise ChunkError(
            413, "body", f"{len(body)} bytes; at most {settings.REPLAY_MAX_CHUNK_BYTES} a chunk"
        )
    if not body.startswith(GZIP_MAGIC):
        return gzip.compress(body, compresslevel=6), body
    return body, stored_text(body)


def stored_text(data: bytes) -> bytes:
    """The JSON text of a chunk's gzip (a stored row's, or a body's), within the caps."""
    try:
        return payloads.gzip_inflate(data, settings.REPLAY_MAX_INFLATED_BYTES)
    except payloads.PayloadError as exc:
        raise ChunkError(exc.status, "body", exc.message) from None


def parse_json_object(text: bytes) -> dict[str, Any]:
    """The chunk's JSON, nested at most replay_chunks.MAX_JSON_DEPTH levels."""
    try:
        data = payloads.json_parse(text, max_depth=replay_chunks.MAX_JSON_DEPTH)
    except payloads.PayloadError as exc:
        raise ChunkError(exc.status, "body", exc.message) from None
    if not isinstance(data, dict):
        raise ChunkError(400, "body", "expected a JSON object")
    return data


def _uuid(data: dict[str, Any], name: str, *, required: bool) -> uuid.UUID | None:
    value = data.get(name)
    if value is None and not required:
        return None
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise ChunkError(400, name, "required: a UUID" if value is None else "not a UUID") from None


def _int(data: dict[str, Any], name: str, low: int, high: int) -> int:
    value = data.get(name)
    if type(value) is not int or not low <= value <= high:
        raise ChunkError(400, name, f"required: an integer from {low} to {high}")
    return value


def _ms(data: dict[str, Any], name: str) -> datetime:
    return datetime.fromtimestamp(_int(data, name, 1, 10**14) / 1000, UTC)


def _text(data: dict[str, Any], name: str, *, required: bool) -> str | None:
    value = data.get(name)
    if value in (None, "") and not required:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_ID:
        raise ChunkError(400, name, f"required: a string of 1 to {MAX_ID} characters")
    return value


def _events(data: dict[str, Any]) -> list[Any]:
    events = data.get("events")
    if not isinstance(events, list) or not events:
        raise ChunkError(400, "events", "required: a non-empty list of recorder events")
    bad = next((i for i, e in enumerate(events) if not _event_ok(e)), None)
    if bad is not None:
        raise ChunkError(400, f"events[{bad}]", "an object with integer type and timestamp")
    return events


def _event_ok(event: Any) -> bool:
    return (
        isinstance(event, dict)
        and type(event.get("type")) is int
        and type(event.get("timestamp")) is int
    )


def chunk_parse(data: dict[str, Any], compressed: bytes, *, received_at: datetime) -> Chunk:
    """Check a chunk's fields; its start and end are moved by the client's clock skew.

    `page` stays on the client's clock: with `seq` it is the row's key, which must be the
    same for every resend of the chunk, while the skew measured differs between them."""
    page, start, end = _ms(data, "page"), _ms(data, "start"), _ms(data, "end")
    if end < start:
        raise ChunkError(400, "end", "before start")
    if not start - settings.SESSION_MAX_DURATION <= page <= start:
        reason = "at most the chunk's start, and within a session's longest duration before it"
        raise ChunkError(400, "page", reason)
    longest = settings.REPLAY_MAX_CHUNK_SECONDS
    if (end - start).total_seconds() > longest:
        raise ChunkError(400, "end", f"a chunk spans at most {longest} s")
    skew = timedelta(0)
    if data.get("sent_at") is not None:
        skew = received_at - _ms(data, "sent_at")
        skew = skew if abs(skew) <= MAX_SKEW else timedelta(0)
    user_key = _text(data, "user_id", required=False) or _text(data, "anonymous_id", required=True)
    return Chunk(
        chunk_id=_uuid(data, "chunk", required=True) or uuid.uuid4(),
        seq=_int(data, "seq", 0, MAX_SEQ),
        page=page,
        start=start + skew,
        end=end + skew,
        user_key=str(user_key),
        last_event=_uuid(data, "last_event", required=False),
        events=len(_events(data)),
        data=compressed,
        dropped=_dropped(data),
    )


def _dropped(data: dict[str, Any]) -> int:
    """The chunks the tab's queue dropped, as this chunk reports them: counted up to
    MAX_DROPPED."""
    if data.get("dropped") is None:
        return 0
    return min(MAX_DROPPED, _int(data, "dropped", 0, 2**31 - 1))


def session_of(site: Site, chunk: Chunk) -> SessionState:
    """The visitor's session covering the chunk's start: the cached state, else the table."""
    gap, longest = settings.SESSION_INACTIVITY, settings.SESSION_MAX_DURATION
    if chunk.user_key in suppressed_keys(site_id=site.id):
        raise ChunkError(403, "anonymous_id", "this visitor's data was erased; not recorded")
    try:
        cached = redis_client().get(state_key(site.id, chunk.user_key))
    except RedisError:
        cached = None
    states = [SessionState.from_json(cached)] if cached else []
    if not any(s.covers(chunk.start, gap=gap, longest=longest) for s in states):
        rows = user_sessions.session_list(site_id=site.id, user_key=chunk.user_key, limit=HISTORY)
        states = [SessionState.from_row(r) for r in rows]
    for state in states:
        if state.covers(chunk.start, gap=gap, longest=longest):
            return state
    raise ChunkError(409, "session", "no session of this visitor covers the chunk yet; retry")


# KEYS: the chunk's claim, the session's bytes, the session's replay mark, the site's bytes
# of the day. ARGV: bytes, the session's cap, its TTL, the site's daily cap, its TTL.
# A chunk id is claimed once a session, and counted against both budgets once; a chunk
# over either cap is neither claimed nor counted. Returns {1 new, 0 claimed before (a
# resend: nothing is written), -1 over the session's cap, -2 over the site's daily cap;
# whether the session's replay mark is set}.
_BUDGET = """
local marked = redis.call('EXISTS', KEYS[3])
if redis.call('EXISTS', KEYS[1]) == 1 then return {0, marked} end
local size = tonumber(ARGV[1])
if tonumber(redis.call('GET', KEYS[2]) or '0') + size > tonumber(ARGV[2]) then
  return {-1, marked}
end
if tonumber(redis.call('GET', KEYS[4]) or '0') + size > tonumber(ARGV[4]) then
  return {-2, marked}
end
redis.call('INCRBY', KEYS[2], size)
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('INCRBY', KEYS[4], size)
redis.call('EXPIRE', KEYS[4], ARGV[5])
redis.call('SET', KEYS[1], size, 'EX', ARGV[3])
return {1, marked}
"""

# A claimed chunk whose write failed: the claim and its bytes given back (the recorder
# sends it again). KEYS as _BUDGET's, without the mark.
_RELEASE = """
local size = redis.call('GET', KEYS[1])
if not size then return 0 end
redis.call('DEL', KEYS[1])
redis.call('DECRBY', KEYS[2], size)
redis.call('DECRBY', KEYS[3], size)
return 1
"""


@dataclass(frozen=True)
class Claim:
    """A chunk's Redis keys: its claim, its session's bytes, the site's bytes of the day."""

    chunk: str
    session_bytes: str
    site_bytes: str

    @classmethod
    def of(cls, site: Site, session_id: uuid.UUID, chunk: Chunk, day: datetime) -> Claim:
        return cls(
            chunk=f"cs:replay:chunk:{site.id}:{session_id}:{chunk.chunk_id}",
            session_bytes=f"cs:replay:bytes:{site.id}:{session_id}",
            site_bytes=f"cs:replay:site-bytes:{site.id}:{day:%Y-%m-%d}",
        )


def session_budget(
    site: Site, session: SessionState, chunk: Chunk, *, claim: Claim, stored: int
) -> tuple[bool, bool]:
    """Count the `stored` bytes of the chunk (its row and the stylesheets it brings)
    against its session's and its site's budgets: (False if the chunk id was claimed in
    this session before, a resend; whether the session's replay mark is set).

    Every stored byte is counted: without Redis nothing can be, and the chunk is a 503
    the recorder sends again. The session's duration is the chunk's end since its start.
    """
    minutes = settings.REPLAY_MAX_SESSION_MINUTES
    if chunk.end - session.started_at > timedelta(minutes=minutes):
        raise ChunkError(413, "session", f"a replay covers at most {minutes} minutes a session")
    cap, ttl = settings.REPLAY_MAX_SESSION_BYTES, int(settings.SESSION_MAX_DURATION.total_seconds())
    site_cap = settings.REPLAY_MAX_SITE_BYTES_PER_DAY
    keys = (claim.chunk, claim.session_bytes, marked_key(site.id, session.session_id))
    try:
        found, marked = redis_client().eval(
            _BUDGET, 4, *keys, claim.site_bytes, stored, cap, ttl, site_cap, 2 * 86_400
        )
    except RedisError:
        raise ChunkError(503, "budget", "the chunk cannot be counted now; send it again") from None
    if found == -1:
        raise ChunkError(413, "session", f"the session's replay is over {cap} bytes")
    if found == -2:
        raise ChunkError(413, "site", f"the site's replays are over {site_cap} bytes today")
    return bool(found), bool(marked)


@contextmanager
def released_on_failure(claim: Claim) -> Iterator[None]:
    """Give the claim and its bytes back if the write inside fails (it is sent again)."""
    try:
        yield
    except BaseException:
        try:
            keys = (claim.chunk, claim.session_bytes, claim.site_bytes)
            redis_client().eval(_RELEASE, 3, *keys)
        except RedisError:
            pass  # the claim lapses with the session's TTL
        raise


def chunk_store(site: Site, session_id: uuid.UUID, chunk: Chunk) -> None:
    """Write the chunk with the site's replay retention as its TTL."""
    replay_chunks.chunk_insert(
        replay_chunks.Row(
            site_id=site.id,
            session_id=session_id,
            page_start=chunk.page,
            seq=chunk.seq,
            chunk_id=chunk.chunk_id,
            user_key=chunk.user_key,
            last_event_id=chunk.last_event,
            start_at=chunk.start,
            end_at=chunk.end,
            events=chunk.events,
            size=len(chunk.data),
            data=chunk.data,
            ttl=site.replay_retention_days * 86_400,
        )
    )


def chunk_slim(chunk: Chunk, data: dict[str, Any], text: bytes) -> tuple[Chunk, assets.Packed]:
    """The chunk with its stylesheets taken out to be stored once per site and referenced
    (features/replays/assets.py), re-compressed, and those stylesheets compressed; as it came, and
    none, when it holds none."""
    if not assets.may_hold_stylesheets(text):  # most chunks: changes and input only
        return chunk, {}
    if b'"isStyle"' not in text:
        text, found = assets.assets_split_text(text)
    else:  # an older recorder's <style> text nodes: the parsed events are walked
        found = assets.assets_split(data["events"])
        if found:
            text = _dumps(data)
    if not found:
        return chunk, {}
    return replace(chunk, data=gzip.compress(text, compresslevel=6)), assets.assets_pack(found)


def _dumps(data: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(data)
    except TypeError:  # a lone surrogate: the stdlib writes its escape
        return json.dumps(data, separators=(",", ":")).encode()


def chunk_accept(site: Site, body: bytes, *, received_at: datetime) -> dict[str, Any]:
    """Check and store one chunk of a site with replay on; ChunkError says why not.

    A chunk id already claimed in its session (a resend whose answer was lost, or an id
    reused) writes nothing: the first one was stored and counted."""
    if not site.replay:
        raise ChunkError(403, "replay", "session replay is off for this site")
    compressed, text = inflate(body)
    data = parse_json_object(text)
    if data.get("site") != site.key:
        raise ChunkError(400, "site", "the chunk names another site key than the request")
    chunk = chunk_parse(data, compressed, received_at=received_at)
    session = session_of(site, chunk)
    chunk, sheets = chunk_slim(chunk, data, text)
    stored = len(chunk.data) + sum(len(gz) for _, gz in sheets.values())
    claim = Claim.of(site, session.session_id, chunk, received_at)
    new, marked = session_budget(site, session, chunk, claim=claim, stored=stored)
    answer = {"stored": new, "duplicate": not new, "session_id": str(session.session_id)}
    if not new:
        return answer
    with released_on_failure(claim):
        assets.assets_store(site, sheets)  # first: a stored chunk never names a missing one
        chunk_store(site, session.session_id, chunk)
    if not marked:  # the explorer's "has replay"
        replay_mark(site, session.session_id, now=received_at)
    if chunk.dropped:
        stats_record(site, {"replay.dropped": chunk.dropped}, received_at=received_at)
    return answer


def rejection_record(site: Site, field: str, *, received_at: datetime) -> None:
    """Count a rejected chunk in ingest_stats, under "replay.<field>" (no events received)."""
    stats_record(site, {f"replay.{field}": 1}, received_at=received_at)


def stats_record(site: Site, lost: dict[str, int], *, received_at: datetime) -> None:
    """One ingest_stats row of chunks lost: refused here, or dropped by the browser's queue
    ("replay.dropped"); no events received."""
    row = ingest_stats.Row(
        site_id=site.id,
        bucket=timebuckets.floor(received_at, timebuckets.Width.HOUR),
        batch_id=time_uuid(received_at, uuid.uuid4().hex),
        received=0,
        accepted=0,
        duplicates=0,
        late=0,
        clamped=0,
        rejected=lost,
    )
    cassandra_session().execute(prepare(ingest_stats.INSERT, idempotent=True, write=True), row)
