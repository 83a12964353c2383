"""Per-site and per-client rate limits in Redis: requests and events, one-second windows.

A client is its IP address, an IPv6 address by its /64 (one host usually holds a whole
/64). The client's limits are checked first, and a request refused for its client is not
counted against its site, so one client can never use up a site's budget: its own limits
are at most half of the site's.
"""

from __future__ import annotations

import ipaddress
import time
import uuid

from django.conf import settings

from sessions_app.foundation.core.redis_client import redis_client

# KEYS: client requests, client events, site requests, site events.
# ARGV: events, then the four limits in the same order (0: no limit).
_CHECK = """
local function over(key, by, limit)
  if limit <= 0 then return false end
  local count = redis.call('INCRBY', key, by)
  if count == by then redis.call('EXPIRE', key, 2) end
  return count > limit
end
local n = tonumber(ARGV[1])
if KEYS[1] ~= '' then
  if over(KEYS[1], 1, tonumber(ARGV[2])) or over(KEYS[2], n, tonumber(ARGV[3])) then
    return 'ip'
  end
end
if over(KEYS[3], 1, tonumber(ARGV[4])) or over(KEYS[4], n, tonumber(ARGV[5])) then
  return 'site'
end
return false
"""


def client_key(ip: str | None) -> str | None:
    """The rate-limit identity of a client address: IPv4 as is, IPv6 by its /64."""
    if not ip:
        return None
    try:
        address = ipaddress.ip_address(ip.strip())
    except ValueError:
        return ip
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def _share(client: int, site: int) -> int:
    """A client's limit: its own, but at most half the site's (when both are set)."""
    if site <= 0:
        return client
    half = max(1, site // 2)
    return half if client <= 0 else min(client, half)


def rate_limited(*, site_id: uuid.UUID, ip: str | None, events: int = 1) -> str | None:
    """Count this request and its events; return the limit exceeded ("ip" or "site")."""
    site_requests, site_events = settings.COLLECT_RATE_PER_SITE, settings.COLLECT_EVENTS_PER_SITE
    client_limits = (settings.COLLECT_RATE_PER_IP, settings.COLLECT_EVENTS_PER_IP)
    if max(site_requests, site_events, *client_limits) <= 0:
        return None
    second = int(time.time())
    client = client_key(ip)
    keys = ["", "", f"cs:rl:site:{site_id}:{second}", f"cs:rl:site-ev:{site_id}:{second}"]
    if client:
        keys[:2] = [f"cs:rl:ip:{client}:{second}", f"cs:rl:ip-ev:{client}:{second}"]
    limits = [
        _share(settings.COLLECT_RATE_PER_IP, site_requests),
        _share(settings.COLLECT_EVENTS_PER_IP, site_events),
        site_requests,
        site_events,
    ]
    found = redis_client().eval(_CHECK, 4, *keys, max(1, events), *limits)
    return found.decode() if isinstance(found, bytes) else found or None
