-- wrk script: POST /collect beacons of BENCH_EVENTS events with unique event ids.
-- Each wrk thread gets its own id prefix; visitors rotate over BENCH_USERS per thread.
local threads = {}

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
end

function request()
  counter = counter + 1
  local now = os.date("!%Y-%m-%dT%H:%M:%S", os.time())
  local visitor = "bench-" .. visitors .. "-" .. tid .. "-" .. (counter % users)
  local parts = {}
  for i = 1, events_per do
    local kind, extra = "pageview", ""
    if i % 3 == 0 then
      kind = "click"
      extra = ',"element":{"tag":"button","id":"buy-' .. i .. '","classes":["btn","primary"],'
        .. '"text":"Add to cart","selector":"main > div.card > button#buy-' .. i .. '"}'
    end
    parts[i] = '{"id":"' .. run .. "-" .. tid .. "-" .. counter .. "-" .. i .. '","type":"'
      .. kind .. '","ts":"' .. now .. string.format(".%03dZ", i) .. '","anonymous_id":"'
      .. visitor .. '","url":"https://shop.example/products/item-' .. (i % 17)
      .. '?ref=bench","title":"Product ' .. (i % 17) .. ' - Shop"' .. extra .. '}'
  end
  local body = '{"site":"' .. site .. '","events":[' .. table.concat(parts, ",") .. ']}'
  return wrk.format("POST", "/collect", {
    ["Content-Type"] = "text/plain;charset=UTF-8",
    ["Origin"] = origin,
    ["User-Agent"] = "Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0 Safari/537.36",
  }, body)
end

function done(summary, latency, requests)
  io.write(string.format(
    "RESULT requests=%d duration_us=%d errors_status=%d errors_connect=%d errors_timeout=%d "
      .. "p50_us=%d p99_us=%d\n",
    summary.requests, summary.duration, summary.errors.status, summary.errors.connect,
    summary.errors.timeout, latency:percentile(50), latency:percentile(99)))
end
