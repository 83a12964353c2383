"""Funnel day scans on the analysis queue, at most FUNNEL_SCANS_PER_SITE of a site at once.

A cold result fans its uncached sealed days out as `funnel_day` tasks, routed to the
Celery queue `analysis` (CELERY_TASK_ROUTES) that only the analysis worker consumes, so
a backlog of scans never waits in front of sealing, erasure or the heartbeat. Each site
holds a Redis sorted set of the days it has queued or running (member: digest and day;
score: when the claim lapses). A result claims free places for its days in one script
(two web workers cannot both take the last one); the days left out stay pending and are
claimed when the result is asked again (the page refreshes while days are pending). A
task gives its place back when it ends; a lost task's place lapses after FUNNEL_TASK_TTL.
"""

from __future__ import annotations

import uuid
from datetime import datetime

import redis
from celery import current_app
from django.conf import settings

from sessions_app.core.redis_client import redis_client

IN_FLIGHT = "cs:funnel-scans"  # Redis: {IN_FLIGHT}:{site} -> the site's claimed days
TASK = "sessions_app.tasks.funnel_day"  # by name: the tasks module imports the analysis

# KEYS[1] the site's set; ARGV: the claim's lifetime (s), the cap, then the wanted members.
# Lapsed claims go first; a member already claimed is not claimed twice.
_CLAIM = """
local now = redis.call('TIME')
local at = tonumber(now[1]) + tonumber(now[2]) / 1e6
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', at)
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
redis.call('EXPIRE', KEYS[1], ARGV[1])
return taken
"""


def _key(site_id: uuid.UUID | str) -> str:
    return f"{IN_FLIGHT}:{site_id}"


def _member(digest: str, day: datetime) -> str:
    return f"{digest}:{day.date().isoformat()}"


def fan_out(*, site_id: uuid.UUID, version_id: int, digest: str, days: list[datetime]) -> int:
    """Queue a `funnel_day` task for each day not queued already, while the site has
    places left; return how many were queued."""
    client = redis_client()
    wanted = {_member(digest, day): day for day in days}
    ttl, cap = settings.FUNNEL_TASK_TTL, settings.FUNNEL_SCANS_PER_SITE
    claimed = client.register_script(_CLAIM)(keys=[_key(site_id)], args=[ttl, cap, *wanted])
    for member in claimed:
        day = wanted[member.decode() if isinstance(member, bytes) else member]
        current_app.send_task(TASK, args=[str(site_id), version_id, day.isoformat(), digest])
    return len(claimed)


def day_done(*, site_id: uuid.UUID | str, digest: str, day: datetime) -> None:
    """A day task finished, failed or was dropped: give its place back."""
    redis_client().zrem(_key(site_id), _member(digest, day))


def scans_in_flight(*, site_id: uuid.UUID | str) -> int:
    """How many of the site's day scans are queued or running (claims not lapsed)."""
    client = redis_client()
    return int(client.zcount(_key(site_id), f"({_redis_now(client)}", "+inf"))


def scans_forget(*, site_id: uuid.UUID | str) -> None:
    """Drop every claim of the site (its tasks purged from the queue by the caller)."""
    redis_client().delete(_key(site_id))


def _redis_now(client: redis.Redis) -> float:
    """Redis's clock, the one the claims were dated by (web and worker hosts may differ)."""
    seconds, micros = client.time()
    return float(seconds) + micros / 1e6
