/* The tracker's session replay recorder (docs/replay.md): loaded by tracker.js when the
 * snippet has data-replay (the site's "Session replay" setting) and the visitor is in
 * its sample; built after rrweb's recorder (@rrweb/record) and fflate into replay.min.js
 * (scripts/build-tracker.mjs), which hands them in as `record` and `fflate`.
 *
 * Private by default: every input value is masked in the page (maskAllInputs: values
 * never leave it), the text of [data-cs-mask] elements (of every element with
 * data-replay-mask="text"), [data-cs-block] elements are not recorded at all (a box of
 * their size instead), no canvas, no fonts; pages whose path matches a pattern of
 * data-replay-exclude ("/account/*") are not recorded. Do-Not-Track and GPC: the tracker
 * never loads this; clickstream.optOut() (or cs_optout stored) stops it and drops what
 * was not sent.
 *
 * Every 5 s (and when the page is hidden) the new events go as one chunk, gzip-compressed
 * here, to POST <endpoint origin>/replay?site=<key> (text/plain: no CORS preflight), with
 * keepalive when small enough; a failed or not-yet-placed chunk (409: the tracker's
 * events have not named the session yet) is retried 1 s, 2 s, 4 s ... later, 6 times.
 * A chunk names the tracker's newest event id (last_event), so the click path and the
 * replay line up. Nothing is sent before the tracker has recorded an event.
 */
(function (w, record, fflate) {
  var cs = w.clickstream, d = document;
  var script = d.querySelector("script[data-site][data-replay]");
  if (!cs || !script || !record || !fflate) return;
  var attr = function (name) {
    return script.getAttribute("data-" + name) || "";
  };
  var site = attr("site");
  var endpoint = new URL("replay", attr("endpoint") || new URL(script.src, location.href).origin + "/collect").href;
  var target = endpoint + "?site=" + encodeURIComponent(site);
  var excluded = attr("replay-exclude").split(",").filter(Boolean).map(function (p) {
    return new RegExp("^" + p.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*") + "$");
  });
  var INTERVAL = 5000, MAX_BYTES = 500000, KEEPALIVE = 60000, TRIES = 6;
  var buffer = [], page = Date.now(), seq = 0, stop = null, dead = 0;

  function off() {
    try {
      return dead || localStorage.getItem("cs_optout") == "1";
    } catch (e) {
      return dead;
    }
  }

  function uuid() {
    var c = w.crypto;
    if (c.randomUUID) return c.randomUUID();
    var b = c.getRandomValues(new Uint8Array(16)), i = 0;
    b[6] = (b[6] & 15) | 64;
    b[8] = (b[8] & 63) | 128;
    return "xxxx-xx-xx-xx-xxxxxx".replace(/x/g, function () {
      return (b[i++] + 256).toString(16).slice(1);
    });
  }

  function isExcluded() {
    var path = location.pathname;
    return excluded.some(function (re) {
      return re.test(path);
    });
  }

  function start() {
    if (stop || off() || isExcluded()) return;
    stop = record({
      emit: function (event) {
        if (!off()) buffer.push(event);
      },
      maskAllInputs: true,
      maskInputOptions: { password: true },
      maskTextSelector: attr("replay-mask") == "text" ? "*" : "[data-cs-mask]",
      blockSelector: "[data-cs-block]",
      recordCanvas: false,
      collectFonts: false,
      slimDOMOptions: "all",
      // mouse moves at most every 50 ms, scroll every 150 ms, an input's last value only
      sampling: { mousemove: 50, scroll: 150, media: 800, input: "last" },
    });
  }

  function halt() {
    if (stop) stop();
    stop = null;
  }

  // An SPA navigation: the events so far belong to the page being left; an excluded
  // page stops the recording, leaving it starts a new one (a new full snapshot).
  function navigated() {
    if (isExcluded()) {
      flush();
      halt();
    } else start();
  }

  function post(bytes, tries) {
    if (off()) return;
    var again = function () {
      if (tries + 1 < TRIES) setTimeout(post, 1000 * Math.pow(2, tries), bytes, tries + 1);
    };
    fetch(target, { method: "POST", body: bytes, keepalive: bytes.length < KEEPALIVE,
      credentials: "omit", headers: { "Content-Type": "text/plain" } }).then(function (r) {
      if (r.status == 403) dead = 1; // replay off for the site, origin or visitor refused
      if (r.status == 409 || r.status == 429 || r.status >= 500) again();
    }, again);
  }

  // The events as chunks of at most MAX_BYTES compressed (a larger batch is halved).
  function send(events) {
    var last = cs.last;
    if (!events.length || !last) return 0;
    var now = Date.now();
    var body = { site: site, chunk: uuid(), seq: seq, page: page, start: events[0].timestamp,
      end: events[events.length - 1].timestamp, sent_at: now, anonymous_id: last.anonymous_id,
      user_id: last.user_id, last_event: last.id, events: events };
    var bytes = fflate.gzipSync(fflate.strToU8(JSON.stringify(body)), { level: 6 });
    if (bytes.length > MAX_BYTES && events.length > 1) {
      var half = Math.ceil(events.length / 2);
      return send(events.slice(0, half)) && send(events.slice(half));
    }
    seq++;
    if (bytes.length <= MAX_BYTES) post(bytes, 0); // one event too big alone is dropped
    return 1;
  }

  function flush() {
    if (off()) {
      buffer = [];
      return halt();
    }
    // Held until the tracker has recorded an event: that names the visitor.
    if (cs.last) send(buffer.splice(0));
  }

  var optOut = cs.optOut;
  cs.optOut = function () {
    optOut.apply(cs, arguments);
    buffer = [];
    halt();
  };
  ["pushState", "replaceState"].forEach(function (m) {
    var orig = history[m];
    history[m] = function () {
      var r = orig.apply(this, arguments);
      navigated();
      return r;
    };
  });
  w.addEventListener("popstate", navigated);
  d.addEventListener("visibilitychange", function () {
    d.visibilityState == "hidden" && flush();
  });
  w.addEventListener("pagehide", flush);
  setInterval(flush, INTERVAL);
  start();
})(window, CS_RECORD, CS_FFLATE);
