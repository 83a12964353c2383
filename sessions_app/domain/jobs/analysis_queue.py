"""A site's places on the analysis queue: its funnel day scans and goal backfills together,
at most ANALYSIS_TASKS_PER_SITE of them queued or running at once.

The Celery queue `analysis` (CELERY_TASK_ROUTES) is shared by every site; so that one site
cannot fill it, each site holds one Redis sorted set of the tasks it has queued or running
(member: what the task does, a funnel's digest and day or a goal's claim; score: when the
claim lapses). A task is sent only once it holds a place, taken in one script (two web
workers, or a web worker and a Celery worker, cannot both take the last one). A task gives
its place back when it ends; a lost task's place (a killed worker, a Redis flush) lapses
after its lifetime, which a long task renews as it goes. What finds no place is not lost:
its owner keeps it pending and asks again (a funnel's page as it refreshes, a goal's
backfill when a place frees or at the next beat).
"""

from __future__ import annotations

import uuid

import redis
from django.conf import settings

from sessions_app.foundation.core.redis_client import redis_client

IN_FLIGHT = "cs:analysis"  # Redis: {IN_FLIGHT}:{site} -> the site's claimed tasks

# The clock is Redis's (web and worker hosts may differ); lapsed claims go first. The key
# lives as long as its longest claim (claims of different lifetimes share it).
_NOW = """
local now = redis.call('TIME')
local at = tonumber(now[1]) + tonumber(now[2]) / 1e6
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', at)
local function keep(ttl)
  if redis.call('TTL', KEYS[1]) < ttl then redis.call('EXPIRE', KEYS[1], ttl) end
end
"""

# KEYS[1] the site's set; ARGV: the claims' lifetime (s), the cap, then the wanted members.
# A member already claimed is not claimed twice; returns the members claimed.
_CLAIM_MANY = (
    _NOW
    + """
local room = tonumber(ARGV[2]) - redis.call('ZCARD', KEYS[1])
local taken = {}
for i = 3, #ARGV do
  if room <= 0 then break end
  if not redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    redis.call('ZADD', KEYS[1], at + tonumber(ARGV[1]), ARGV[i])
    taken[#taken + 1] = ARGV[i]
    room = room - 1
  end
end
if #taken > 0 then keep(tonumber(ARGV[1])) end
return taken
"""
)

# KEYS[1] the site's set; ARGV: the claim's lifetime (s), the cap, the owner's prefix, the
# member (the prefix and a token of its own). Claimed (1) only if the site has room and
# no live member starts with the prefix (the owner has no task queued or running).
_CLAIM_ONE = (
    _NOW
    + """
local held = redis.call('ZRANGE', KEYS[1], 0, -1)
if #held >= tonumber(ARGV[2]) then return 0 end
for _, member in ipairs(held) do
  if string.sub(member, 1, #ARGV[3]) == ARGV[3] then return 0 end
end
redis.call('ZADD', KEYS[1], at + tonumber(ARGV[1]), ARGV[4])
keep(tonumber(ARGV[1]))
return 1
"""
)

# KEYS[1] the site's set; ARGV: the claim's lifetime (s), the member. A live claim lives
# on for the lifetime from now (1); a lapsed or released one is not taken again (0).
_RENEW = (
    _NOW
    + """
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], 'XX', at + tonumber(ARGV[1]), ARGV[2])
keep(tonumber(ARGV[1]))
return 1
"""
)


def _key(site_id: uuid.UUID | str) -> str:
    return f"{IN_FLIGHT}:{site_id}"


def _text(member: bytes | str) -> str:
    return member.decode() if isinstance(member, bytes) else member


def claim_many(*, site_id: uuid.UUID | str, members: list[str], ttl: int) -> list[str]:
    """Claim a place for each member not claimed already, while the site has places left;
    return those claimed (the caller sends their tasks)."""
    script = redis_client().register_script(_CLAIM_MANY)
    claimed = script(keys=[_key(site_id)], args=[ttl, settings.ANALYSIS_TASKS_PER_SITE, *members])
    return [_text(m) for m in claimed]


def claim_one(*, site_id: uuid.UUID | str, owner: str, ttl: int) -> str | None:
    """Claim a place for one task of `owner` (a goal's backfill) unless the owner has one
    queued or running or the site has no place left; return the claim (the task carries
    it, to renew and release it), or None."""
    member = f"{owner}:{uuid.uuid4().hex}"
    script = redis_client().register_script(_CLAIM_ONE)
    args = [ttl, settings.ANALYSIS_TASKS_PER_SITE, f"{owner}:", member]
    return member if script(keys=[_key(site_id)], args=args) else None


def renew(*, site_id: uuid.UUID | str, member: str, ttl: int) -> bool:
    """Keep a running task's claim for `ttl` more seconds; False if it lapsed meanwhile (the
    place may be another task's now: the task stops)."""
    script = redis_client().register_script(_RENEW)
    return bool(script(keys=[_key(site_id)], args=[ttl, member]))


def release(*, site_id: uuid.UUID | str, member: str) -> None:
    """A task finished, failed or was dropped: give its place back."""
    redis_client().zrem(_key(site_id), member)


def in_flight(*, site_id: uuid.UUID | str) -> int:
    """How many of the site's analysis tasks are queued or running (claims not lapsed)."""
    client = redis_client()
    return int(client.zcount(_key(site_id), f"({_redis_now(client)}", "+inf"))


def forget(*, site_id: uuid.UUID | str) -> None:
    """Drop every claim of the site (its tasks purged from the queue by the caller)."""
    redis_client().delete(_key(site_id))


def _redis_now(client: redis.Redis) -> float:
    """Redis's clock, the one the claims were dated by."""
    seconds, micros = client.time()
    return float(seconds) + micros / 1e6
