-- wrk script: POST /collect beacons of BENCH_EVENTS events with unique event ids.
-- Each wrk thread gets its own id prefix; visitors rotate over BENCH_USERS per thread.
local threads = {}

-- The wall clock in milliseconds (LuaJIT's FFI: os.time() has whole seconds only). A
-- visitor's events carry increasing times, as a browser's do; whole-second stamps made
-- two beacons of one visitor within a second look older than its session's last event,
-- which sends the collector to Cassandra to check for a resend.
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } cs_timespec;
int clock_gettime(int clk_id, cs_timespec *tp);
]]
local clock = ffi.new("cs_timespec")
local function now_ms()
  ffi.C.clock_gettime(0, clock)  -- CLOCK_REALTIME
  return tonumber(clock.tv_sec) * 1000 + math.floor(tonumber(clock.tv_nsec) / 1000000)
end

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  events_per = tonumber(os.getenv("BENCH_EVENTS") or "30")
  users = tonumber(os.getenv("BENCH_USERS") or "100")
  site = os.getenv("BENCH_SITE")
  origin = os.getenv("BENCH_ORIGIN") or "http://127.0.0.1:8000"
  run = os.getenv("BENCH_RUN") or "r"
  -- Visitors are named by BENCH_VISITORS (default: the run id), so a warm-up run can
  -- make them known before the measured run, which uses new event ids.
  visitors = os.getenv("BENCH_VISITORS") or run
  counter = 0
  agents = {
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
    "Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1",
  }
  languages = { "en-US,en;q=0.9", "de-DE,de;q=0.9,en;q=0.8", "fr-FR,fr;q=0.9", "es-ES,es;q=0.9" }
end

local function stamp(ms)  -- ISO 8601, UTC, milliseconds
  return os.date("!%Y-%m-%dT%H:%M:%S", math.floor(ms / 1000)) .. string.format(".%03dZ", ms % 1000)
end

function request()
  counter = counter + 1
  local sent = now_ms()
  local visitor = "bench-" .. visitors .. "-" .. tid .. "-" .. (counter % users)
  local parts = {}
  for i = 1, events_per do
    local kind, extra = "pageview", ""
    if i == 1 then  -- where the visit came from: the landing of a new session
      extra = ',"referrer":"https://www.google.com/search?q=item"'
    end
    if i % 3 == 0 then
      kind = "click"
      extra = ',"element":{"tag":"button","id":"buy-' .. i .. '","classes":["btn","primary"],'
        .. '"text":"Add to cart","selector":"main > div.card > button#buy-' .. i .. '"}'
    end
    parts[i] = '{"id":"' .. run .. "-" .. tid .. "-" .. counter .. "-" .. i .. '","type":"'
      .. kind .. '","ts":"' .. stamp(sent - events_per + i) .. '","anonymous_id":"'
      .. visitor .. '","url":"https://shop.example/products/item-' .. (i % 17)
      .. '?ref=bench","title":"Product ' .. (i % 17) .. ' - Shop"' .. extra .. '}'
  end
  local body = '{"site":"' .. site .. '","events":[' .. table.concat(parts, ",") .. ']}'
  -- Visitors differ as real ones do: browser builds, public addresses (X-Forwarded-For,
  -- one trusted proxy), languages; the collector enriches each request from them.
  local n = counter % users
  return wrk.format("POST", "/collect", {
    ["Content-Type"] = "text/plain;charset=UTF-8",
    ["Origin"] = origin,
    ["User-Agent"] = agents[n % #agents + 1] .. " v" .. (n % 7),
    ["X-Forwarded-For"] = (80 + n % 40) .. "." .. (tid * 7 % 256) .. "." .. (n % 251) .. ".9",
    ["Accept-Language"] = languages[n % #languages + 1],
  }, body)
end

-- BENCH_DELAY_MS paces each connection: a pause after every answer (bench/run.py's
-- paced figure measures latency below saturation with it).
local pause = tonumber(os.getenv("BENCH_DELAY_MS") or "0")
if pause > 0 then
  function delay()
    return pause
  end
end

function done(summary, latency, requests)
  io.write(string.format(
    "RESULT requests=%d duration_us=%d errors_status=%d errors_connect=%d errors_timeout=%d "
      .. "p50_us=%d p99_us=%d\n",
    summary.requests, summary.duration, summary.errors.status, summary.errors.connect,
    summary.errors.timeout, latency:percentile(50), latency:percentile(99)))
end
