"""The collector's Redis work for one batch, in two round trips.

`begin` marks event ids as pending (the first sighting wins), takes each user's
sessionization lock and reads their cached session state; `finish` — called once
the batch is durably in the transaction log — commits the marks as seen for
DEDUP_TTL, stores the new states, releases the locks and hands the plan to the
applier queue and adds the realtime marks (domain/ingest/realtime.py). A request that dies
between the two (kill -9) leaves pending marks that expire in PENDING_MS, and a
retry that meets one waits for it to be committed or to expire, then takes it
over: an event is only ever reported as a duplicate once an earlier request
logged it. Both are Lua scripts, so each is a single
atomic round trip. Redis is a cache and a coordinator here, never the truth:
when it is unreachable, `begin` reports nothing seen, no locks and no states,
and the caller falls back to Cassandra.
"""

from __future__ import annotations

import logging
import secrets
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from redis.exceptions import RedisError

from sessions_app.domain.ingest.realtime import KEY_TTL as REALTIME_KEY_TTL
from sessions_app.domain.ingest.realtime import MAX_PATHS as REALTIME_MAX_PATHS
from sessions_app.domain.ingest.realtime import Marks, minute_keys
from sessions_app.domain.ingest.state import state_key
from sessions_app.foundation.core.redis_client import redis_client

log = logging.getLogger(__name__)
DEDUP_PREFIX = "cs:ev"
LOCK_PREFIX = "cs:lock"
LOCK_MS = 10_000
LOCK_WAIT_SECONDS = 5.0
PENDING_MS = 30_000  # longer than any request may take to write its log entry

# The applier queue (domain/ingest/applier.py): plans waiting to be written to the tables,
# the key an applier keeps alive while it runs, and how many plans found none.
QUEUE_KEY = "cs:apply:queue"
ALIVE_KEY = "cs:apply:alive"
INLINE_KEY = "cs:apply:inline"

_BEGIN = """
local nd, nu = tonumber(ARGV[1]), tonumber(ARGV[2])
local pending = 'p:' .. ARGV[4]
local fresh, locked, states = {}, {}, {}
for i = 1, nd do
  local seen = redis.call('GET', KEYS[i])
  if not seen then
    redis.call('SET', KEYS[i], pending, 'PX', ARGV[3])
    fresh[i] = 1
  elseif string.sub(seen, 1, 2) == 'p:' then
    fresh[i] = 2
  else
    fresh[i] = 0
  end
end
for j = 1, nu do
  locked[j] = redis.call('SET', KEYS[nd + j], ARGV[4], 'NX', 'PX', ARGV[5]) and 1 or 0
  states[j] = redis.call('GET', KEYS[nd + nu + j]) or ''
end
return {fresh, locked, states}
"""

_FINISH = """
local ns, nl = tonumber(ARGV[1]), tonumber(ARGV[2])
local nv, np = tonumber(ARGV[9]), tonumber(ARGV[10])
local token = ARGV[4]
local queued = 0
if ARGV[6] == '1' then
  if redis.call('EXISTS', KEYS[2]) == 1 and redis.call('LLEN', KEYS[1]) < tonumber(ARGV[7]) then
    redis.call('RPUSH', KEYS[1], ARGV[8])
    queued = 1
  else
    redis.call('INCR', KEYS[3])
  end
end
for i = 1, ns do
  redis.call('SET', KEYS[5 + i], ARGV[12 + i], 'EX', ARGV[3])
end
for j = ns + 1, ns + nl do
  if redis.call('GET', KEYS[5 + j]) == token then redis.call('DEL', KEYS[5 + j]) end
end
for k = ns + nl + 1, #KEYS - 5 do
  if redis.call('GET', KEYS[5 + k]) == 'p:' .. token then
    redis.call('SET', KEYS[5 + k], 1, 'EX', ARGV[5])
  end
end
-- realtime: this minute's visitors (HyperLogLog) and page views by path (sorted set)
if nv > 0 then
  redis.call('PFADD', KEYS[4], unpack(ARGV, 13 + ns, 12 + ns + nv))
  redis.call('EXPIRE', KEYS[4], ARGV[11])
end
for p = 1, np do
  redis.call('ZINCRBY', KEYS[5], 1, ARGV[12 + ns + nv + p])
end
if np > 0 then
  redis.call('EXPIRE', KEYS[5], ARGV[11])
  -- bounded: the least viewed paths beyond the cap go (a site with endless distinct URLs)
  if redis.call('ZCARD', KEYS[5]) > tonumber(ARGV[12]) then
    redis.call('ZREMRANGEBYRANK', KEYS[5], 0, -tonumber(ARGV[12]) - 1)
  end
end
return queued
"""

_ABANDON = """
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then redis.call('DEL', KEYS[i]) end
end
return #KEYS
"""

_scripts: dict[tuple[int, str], Any] = {}


def _script(source: str) -> Any:
    client = redis_client()
    key = (id(client), source)
    script = _scripts.get(key)
    if script is None:
        script = _scripts[key] = client.register_script(source)
    return script


def dedup_key(site_id: uuid.UUID, client_event_id: str) -> str:
    return f"{DEDUP_PREFIX}:{site_id}:{client_event_id}"


def lock_key(site_id: uuid.UUID, user_key: str) -> str:
    return f"{LOCK_PREFIX}:{site_id}:{user_key}"


@dataclass
class Claim:
    """What `begin` found: new event ids, held locks and cached session states."""

    site_id: uuid.UUID
    token: str
    fresh: list[bool]
    new_keys: list[str]
    locked: list[str] = field(default_factory=list)
    states: dict[str, str | None] = field(default_factory=dict)
    redis_ok: bool = True
    dedup_ttl: int = 0


def begin(
    *, site_id: uuid.UUID, client_ids: list[str], user_keys: list[str], dedup_ttl: int
) -> Claim:
    """Mark event ids seen, lock the users and read their session states (one round trip)."""
    token = secrets.token_hex(8)
    keys = [dedup_key(site_id, c) for c in client_ids]
    locks = [lock_key(site_id, u) for u in user_keys]
    states = [state_key(site_id, u) for u in user_keys]
    try:
        fresh, locked, cached = _script(_BEGIN)(
            keys=[*keys, *locks, *states],
            args=[len(keys), len(user_keys), PENDING_MS, token, LOCK_MS],
        )
        # One deadline for every wait of this request (pending marks, then locks): a
        # retry of a beacon whose request died answers within LOCK_WAIT_SECONDS or so,
        # not once per event — a client that times out meanwhile would send a third copy
        # that runs beside it, without the lock.
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        for i, mark in enumerate(fresh):
            if mark == 2:  # another request holds it pending: wait for its outcome
                fresh[i] = _wait_for_mark(keys[i], token, deadline)
    except RedisError:
        log.warning("dedup, locks and session cache skipped: Redis unavailable")
        return Claim(
            site_id, token, [True] * len(keys), [], redis_ok=False, states=dict.fromkeys(user_keys)
        )
    claim = Claim(
        site_id=site_id,
        token=token,
        fresh=[bool(f) for f in fresh],
        new_keys=[k for k, f in zip(keys, fresh, strict=True) if f],
        dedup_ttl=dedup_ttl,
    )
    waiting = []
    for user_key, got, text in zip(user_keys, locked, cached, strict=True):
        if got:
            claim.locked.append(user_key)
            claim.states[user_key] = text.decode() if text else None
        else:
            waiting.append(user_key)
    for user_key in waiting:  # another request holds it: wait, then read the state it left
        claim.states[user_key] = _wait_for_lock(claim, user_key, deadline)
    return claim


def _wait_for_mark(key: str, token: str, deadline: float) -> int:
    """Return 0 once the holder committed the mark (a duplicate), 1 once it is ours.

    The mark becomes ours when the holder gave up (deleted) or died (expired), or
    after LOCK_WAIT_SECONDS, when a holder that slow is taken over: the rows are
    idempotent, only the accounting may count the event twice.
    """
    client = redis_client()
    pending = f"p:{token}"
    while time.monotonic() < deadline:
        seen = client.get(key)
        if seen is None:
            if client.set(key, pending, nx=True, px=PENDING_MS):
                return 1
            continue
        if not (seen.decode() if isinstance(seen, bytes) else seen).startswith("p:"):
            return 0
        time.sleep(0.01)
    log.warning("event mark %s still pending after %ss; taking it over", key, LOCK_WAIT_SECONDS)
    client.set(key, pending, px=PENDING_MS)
    return 1


def _wait_for_lock(claim: Claim, user_key: str, deadline: float) -> str | None:
    client = redis_client()
    try:
        while time.monotonic() < deadline:
            if client.set(lock_key(claim.site_id, user_key), claim.token, nx=True, px=LOCK_MS):
                claim.locked.append(user_key)
                break
            time.sleep(0.005)
        else:
            log.warning(
                "sessionization lock for %s not acquired in %ss; going on",
                user_key,
                LOCK_WAIT_SECONDS,
            )
        text = client.get(state_key(claim.site_id, user_key))
    except RedisError:
        return None
    return text.decode() if isinstance(text, bytes) else text


def finish(
    claim: Claim,
    *,
    states: dict[str, str],
    ttl: int,
    enqueue: bytes | None = None,
    now: Marks | None = None,
    minute: datetime | None = None,
) -> bool:
    """Commit the event marks as seen, store the new session states, unlock (one round trip).

    Call it only once the batch is durable (in the transaction log). With `enqueue`
    (a plan's log payload), the same round trip hands the plan to the applier
    queue when an applier is alive and the queue is under APPLY_QUEUE_MAX_PLANS;
    returns whether it was queued (if not, the caller applies it itself). `now`: the
    request's realtime marks (domain/ingest/realtime.py) for the minute `minute`.
    """
    if not claim.redis_ok or not (states or claim.locked or claim.new_keys or enqueue):
        return False
    visitors, pages = (now.visitors, now.pages) if now is not None else ([], [])
    keys = [QUEUE_KEY, ALIVE_KEY, INLINE_KEY]
    keys += minute_keys(claim.site_id, minute or datetime.now(UTC))
    keys += [state_key(claim.site_id, u) for u in states]
    keys += [lock_key(claim.site_id, u) for u in claim.locked]
    keys += claim.new_keys
    try:
        queued = _script(_FINISH)(
            keys=keys,
            args=[
                len(states),
                len(claim.locked),
                ttl,
                claim.token,
                claim.dedup_ttl,
                "1" if enqueue else "0",
                settings.APPLY_QUEUE_MAX_PLANS,
                enqueue or b"",
                len(visitors),
                len(pages),
                REALTIME_KEY_TTL,
                REALTIME_MAX_PATHS,
                *states.values(),
                *visitors,
                *pages,
            ],
        )
    except RedisError:
        log.warning("session cache not updated: Redis unavailable")
        return False
    return bool(queued)


def abandon(claim: Claim) -> None:
    """Forget the event ids this claim marked (the batch was not stored) and unlock."""
    if not claim.redis_ok:
        return
    try:
        if claim.new_keys:
            _script(_ABANDON)(keys=claim.new_keys, args=[f"p:{claim.token}"])
    except RedisError:
        log.warning("could not release %d dedup keys", len(claim.new_keys))
    finish(Claim(claim.site_id, claim.token, [], [], claim.locked, redis_ok=True), states={}, ttl=1)
