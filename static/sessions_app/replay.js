/* The tracker's session replay recorder (docs/replay.md): loaded by tracker.js when the
 * snippet has data-replay (the site's "Session replay" setting) and the visitor is in
 * its sample; built after rrweb's recorder (@rrweb/record) and fflate into replay.min.js
 * (scripts/build-tracker.mjs), which hands them in as `record` and `fflate`.
 *
 * Private by default, masked in the page before anything is sent (scrub): the value of
 * every <input> (hidden ones too), <textarea> and <select>, a select's and a hidden
 * input's as a constant "********" (its length or option not to be told); the text of
 * [data-cs-mask] elements (of every element with data-replay-mask="text") and of what is
 * editable (contenteditable); inside either, every attribute but the layout ones (KEEP:
 * no title, alt, href, src, data-*), set later or not; [data-cs-block] elements are not
 * recorded at all (a box of their size instead), no canvas, no fonts; pages whose path matches a pattern of
 * data-replay-exclude ("/account/*") are not recorded. Do-Not-Track and GPC: the tracker
 * never loads this; clickstream.optOut() (or cs_optout stored) stops it and drops what
 * was not sent.
 *
 * Every 5 s (data-replay-interval: ms, at least 1000) and when the page is hidden, the new
 * events go as one chunk, gzip-compressed here, to POST <endpoint origin>/replay?site=<key>
 * (text/plain: no CORS preflight), with keepalive when small enough. A failed or not-yet-placed chunk (network, 408, 409: the
 * tracker's events have not named the session yet, 429, 5xx) goes to the tab's stored
 * retry queue (sessionStorage "cs_replay_retry": the tracker's own localStorage queue
 * holds events only and its 4 KB budget has no room for chunks) and is sent again on the
 * tracker's schedule (1 s, 2 s, 4 s ... 60 s, jittered; its sent_at renewed), by this
 * page or the tab's next one; a stored chunk leaves the queue only when the collector is
 * done with it (a resend of a chunk it had stored is a duplicate it answers as such). At most STORE_CHUNKS
 * chunks and STORE_CHARS characters are kept, the oldest dropped beyond; the next chunk
 * carries the count of chunks dropped since the last one did (`dropped`: counted once by
 * the collector in ingest_stats; a carried count dropped in turn moves on).
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
  var INTERVAL = Math.max(1000, +attr("replay-interval") || 5000);
  var MAX_BYTES = 500000, KEEPALIVE = 60000;
  var STORE = "cs_replay_retry", STORE_CHUNKS = 30, STORE_CHARS = 1500000; // base64 of gzip
  var buffer = [], page = Date.now(), seq = 0, stop = null, dead = 0;
  var MASK = "[data-cs-mask],[contenteditable]:not([contenteditable=false])";
  var FIELD = /^(input|textarea|select)$/, BUTTON = /^(submit|button|reset|image|radio|checkbox)$/i;
  var KEEP = /^(class|id|style|type|role|width|height|hidden|disabled|dir|lang|colspan|rowspan|contenteditable|data-cs-mask|data-cs-block|rr_width|rr_height|_cssText)$/;
  var failures = 0, timer = 0, retrying = 0;

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

  // Inside a masked or editable element only the layout attributes are kept (rrweb masks
  // text, not attributes): a recorded element's (snapshot, added node) by its recorded
  // ancestors, an attribute change's by where the element is in the page now.
  function strip(attributes) {
    for (var name in attributes) KEEP.test(name) || delete attributes[name];
  }

  function masked(id) {
    var n = record.mirror.getNode(id);
    if (!n) return true; // no longer in the page: nothing of it is needed
    if (n.nodeType != 1) n = n.parentElement || n.host; // a text node, a shadow root
    return !!(n && n.closest(MASK));
  }

  function tree(node, inside) {
    var a = node.attributes;
    if (node.type == 2) { // an element
      inside = inside || "data-cs-mask" in a || (a.contenteditable != null && a.contenteditable != "false");
      inside && strip(a);
      // rrweb masks a field's current value; an emptied one kept its HTML value attribute
      if (FIELD.test(node.tagName) && !BUTTON.test(a.type) && /[^*]/.test(a.value || "*")) a.value = "********";
    }
    (node.childNodes || []).forEach(function (child) {
      tree(child, inside);
    });
  }

  function scrub(event) {
    var data = event.data;
    if (event.type == 2) tree(data.node, false); // a full snapshot
    if (event.type == 3 && data.source == 0) { // a mutation
      data.adds.forEach(function (add) {
        tree(add.node, masked(add.parentId));
      });
      data.attributes.forEach(function (change) {
        masked(change.id) && strip(change.attributes);
      });
    }
    return event;
  }

  function start() {
    if (stop || off() || isExcluded()) return;
    stop = record({
      emit: function (event) {
        if (!off()) buffer.push(scrub(event));
      },
      // every element of these tags, whatever its type (maskAllInputs misses hidden ones)
      maskInputOptions: { input: true, textarea: true, select: true },
      maskInputFn: function (text, el) {
        return el.type == "hidden" || el.tagName == "SELECT" ? text && "********" : "*".repeat(text.length);
      },
      maskTextSelector: attr("replay-mask") == "text" ? "*" : MASK,
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

  // ---- the stored retry queue: {dropped: n, chunks: [{id, b: base64 of the gzip, d: the
  // dropped count it carries}]} ----
  function readStore() {
    try {
      var s = JSON.parse(sessionStorage.getItem(STORE));
      if (s && Array.isArray(s.chunks)) return s;
    } catch (e) {}
    return { dropped: 0, chunks: [] };
  }

  // Written within the caps, the oldest chunks dropped (and counted) beyond them or
  // when the browser's quota refuses.
  function writeStore(s) {
    var size = function () {
      return s.chunks.reduce(function (n, c) {
        return n + c.b.length;
      }, 0);
    };
    var drop = function () {
      s.dropped += 1 + (s.chunks.shift().d || 0);
    };
    while (s.chunks.length > STORE_CHUNKS || (s.chunks.length > 1 && size() > STORE_CHARS)) drop();
    for (;;) {
      try {
        return s.chunks.length || s.dropped ? sessionStorage.setItem(STORE, JSON.stringify(s)) : sessionStorage.removeItem(STORE);
      } catch (e) {
        if (!s.chunks.length) return; // no storage at all (sandboxed, disabled)
        drop();
      }
    }
  }

  function keep(id, bytes, dropped) {
    var s = readStore();
    s.chunks.push({ id: id, b: btoa(fflate.strFromU8(bytes, true)), d: dropped });
    writeStore(s);
  }

  function forget(id) {
    var s = readStore();
    s.chunks = s.chunks.filter(function (c) {
      return c.id != id;
    });
    writeStore(s);
  }

  // Resolves to true when the collector is done with the chunk: stored (or stored
  // before), or refused for good; 403 stops the recorder and empties the queue.
  // keepalive (a new chunk, which may be the page's last) only under 60 KB: browsers
  // refuse keepalive bodies over 64 KB in flight together; a retry goes without it.
  function post(bytes, keepalive) {
    return fetch(target, { method: "POST", body: bytes, keepalive: keepalive && bytes.length < KEEPALIVE,
      credentials: "omit", headers: { "Content-Type": "text/plain" } }).then(function (r) {
      return r.status;
    }, function () {
      return 0;
    }).then(function (status) {
      if (status == 403) {
        dead = 1; // replay off for the site, origin or visitor refused
        writeStore({ dropped: 0, chunks: [] });
      }
      return !(!status || status == 408 || status == 409 || status == 429 || status >= 500);
    });
  }

  // The tracker's schedule: 1 s, 2 s, 4 s ... 60 s after each failed round, jittered.
  function schedule() {
    if (timer) return;
    var base = Math.min(1000 * Math.pow(2, failures++), 60000);
    timer = setTimeout(retry, base / 2 + (Math.random() * base) / 2);
  }

  // A stored chunk with sent_at now: the collector measures the clock skew by it (the
  // old one would move the chunk back by the time it waited).
  function restamp(bytes) {
    var body = JSON.parse(fflate.strFromU8(fflate.gunzipSync(bytes)));
    body.sent_at = Date.now();
    return fflate.gzipSync(fflate.strToU8(JSON.stringify(body)), { level: 6 });
  }

  function retry() {
    timer = 0;
    var chunks = readStore().chunks;
    if (retrying || off() || !chunks.length) return;
    retrying = 1;
    Promise.all(chunks.map(function (c) {
      try {
        var bytes = restamp(fflate.strToU8(atob(c.b), true));
      } catch (e) {
        forget(c.id); // not a chunk (the stored value was changed): dropped
        return true;
      }
      return post(bytes, 0).then(function (done) {
        done && forget(c.id);
        return done;
      });
    })).then(function (results) {
      retrying = 0;
      if (results.indexOf(false) < 0) failures = 0;
      if (!off() && readStore().chunks.length) schedule();
    });
  }

  function deliver(id, bytes, dropped) {
    post(bytes, 1).then(function (done) {
      if (done || off()) return;
      keep(id, bytes, dropped);
      schedule();
    });
  }

  // The events as chunks of at most MAX_BYTES compressed (a larger batch is halved).
  function send(events) {
    var last = cs.last;
    if (!events.length || !last) return 0;
    var now = Date.now(), id = uuid(), s = readStore(), dropped = s.dropped;
    var body = { site: site, chunk: id, seq: seq, page: page, start: events[0].timestamp,
      end: events[events.length - 1].timestamp, sent_at: now, anonymous_id: last.anonymous_id,
      user_id: last.user_id, last_event: last.id, dropped: dropped || undefined, events: events };
    var bytes = fflate.gzipSync(fflate.strToU8(JSON.stringify(body)), { level: 6 });
    if (bytes.length > MAX_BYTES && events.length > 1) {
      var half = Math.ceil(events.length / 2);
      return send(events.slice(0, half)) && send(events.slice(half));
    }
    seq++;
    if (bytes.length > MAX_BYTES) return 1; // one event too big alone is dropped
    if (dropped) writeStore((s.dropped = 0, s)); // the count moves into this chunk
    deliver(id, bytes, dropped);
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
    clearTimeout(timer);
    timer = 0;
    writeStore({ dropped: 0, chunks: [] });
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
  if (readStore().chunks.length) schedule(); // chunks an earlier page of this tab could not send
  start();
})(window, CS_RECORD, CS_FFLATE);
