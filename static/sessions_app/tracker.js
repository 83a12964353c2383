/*!
 * clickstream tracker: a small first-party browser beacon. No dependencies.
 * Build: `npm run build` writes tracker.min.js from this file. Docs: docs/tracker.md.
 *
 * Installation (one classic script tag; data-endpoint is optional):
 *   <script async src="https://analytics.example.com/static/sessions_app/tracker.min.js"
 *     data-site="cs_XXXX" data-endpoint="https://analytics.example.com/collect"></script>
 * Other attributes: data-flush-interval (ms, 5000), data-batch-size (20),
 * data-auto="false" (no automatic page views or clicks).
 * A page whose URL fragment holds cs-heatmap=<token> loads the heatmap overlay
 * (<script origin>/static/sessions_app/heatmap.js) and records nothing.
 *
 * Wire format: POST <endpoint>, Content-Type text/plain (no CORS preflight), body JSON
 *   {"site": "cs_XXXX", "sent_at": "<ISO-8601 UTC ms, send time>", "events": [event, ...]}
 * at most 50 events a request. Each event:
 *   id            uuid v4 made by the client (stable across retries)
 *   type          "pageview" | "click" | "custom"
 *   name          custom events only ("$identify" after identify(), "$pageleave" below)
 *   ts            ISO-8601 UTC with microseconds, when the event happened: the clock's
 *                 millisecond, then a counter within it, so the events of one page keep the
 *                 order they were recorded in (clock skew: the server uses
 *                 ts + received_at - sent_at)
 *   anonymous_id  uuid v4 kept first-party (localStorage "cs_aid", else cookie "cs_aid")
 *   user_id       after identify() only
 *   url, title    location.href, document.title
 *   referrer      page views only, when document.referrer is not empty
 *   viewport      page views and clicks: window.innerWidth in CSS pixels
 *   element       clicks only: {tag, id, classes, text, href, selector}; empty fields omitted.
 *                 Every click: the nearest interactive ancestor (CLICKABLE), else the target
 *   pos           clicks only: {x: pageX / document width (0-1, 4 decimals), y: pageY (px),
 *                 ex, ey: where in the element (0-1, 3 decimals; each left out when that
 *                 side of the element is 0 px)}
 *   rage          clicks only, true or left out: the 3rd or later click within 1 s of the
 *                 first of a burst, each within 30 px of it
 *   dead          clicks only, true or left out: in the 1 s after the click no DOM mutation,
 *                 no input/change event, no URL change, the page not hidden. A click is
 *                 queued when that second is over, or at once when any of these happens
 *   props         custom events only, a JSON object
 * When the page is hidden, and before an SPA page view, a custom "$pageleave" for the page
 * view being left: url = its url, props {pageview: its id, scroll: deepest (scrollY +
 * innerHeight) / document height reached, percent 0-100, fold: innerHeight at the page
 * view}. Sent again on each hide; the largest scroll counts.
 *
 * Privacy guarantees:
 * - Do-Not-Track or Global Privacy Control on: nothing is captured, stored or sent.
 * - clickstream.optOut(): nothing is captured or sent any more (localStorage "cs_optout"),
 *   queued and stored events and the stored ids are deleted.
 * - Never captured: what anyone types (input values, except the label of button and
 *   submit inputs), clicks on password and hidden inputs, the text of select, textarea
 *   and contenteditable elements, anything inside [data-cs-ignore].
 * - fetch requests go without credentials (credentials: "omit"); sendBeacon cannot omit
 *   them, so the collector must neither set nor read cookies. The tracker's only cookie
 *   is the first-party cs_aid fallback on the customer's own site.
 */
(function (w) {
  "use strict";

  var CLICKABLE =
    "a,button,input[type=button],input[type=submit],[role=button],summary,select,label,[data-cs-track]";
  // An element containing one of these has its text left out.
  var NO_TEXT = "[data-cs-ignore],[contenteditable],textarea,select";
  var RETRY_KEY = "cs_retry";
  var RETRY_MAX = 100; // events kept for retry, oldest dropped beyond
  var PER_REQUEST = 50; // events a request
  // Query and fragment parameters whose names end like a secret: dropped from every URL.
  var SECRET = /(token|key|secret|pass\w*|pwd|auth|code|sess\w*|sid|sig(nature)?|jwt|otp)$/i;
  var SECOND = 1000; // a rage burst lasts, and a click is watched for being dead, this long

  // ---- pure helpers (exercised by tests/tracker) ----

  function dnt(nav, win) {
    return nav.doNotTrack == "1" || win.doNotTrack == "1" || nav.globalPrivacyControl === true;
  }

  // Collapse whitespace and control characters, trim, cut to n UTF-16 units without
  // leaving half a surrogate pair.
  function clip(s, n) {
    s = String(s == null ? "" : s)
      .replace(/[\s\x00-\x1f\x7f]+/g, " ")
      .trim()
      .slice(0, n);
    return /[\ud800-\udbff]$/.test(s) ? s.slice(0, -1) : s;
  }

  function tagOf(el) {
    return clip(el.tagName, 32).toLowerCase();
  }

  function classesOf(el) {
    return ((el.getAttribute && el.getAttribute("class")) || "")
      .split(/\s+/)
      .filter(Boolean)
      .slice(0, 10)
      .map(function (c) {
        return clip(c, 64);
      });
  }

  // "main > div.card > button#buy": at most 5 levels, stops above at an ancestor with an id
  // and below <body>.
  function selectorOf(el) {
    for (var out = [], n = el, i = 0; n && n.nodeType == 1 && i < 5; i++, n = n.parentElement) {
      var t = tagOf(n), c = classesOf(n)[0];
      if (t == "html" || t == "body") break;
      out.unshift(t + (n.id ? "#" + CSS.escape(n.id) : c ? "." + CSS.escape(c) : ""));
      if (n.id && n != el) break;
    }
    return out.join(" > ").slice(0, 512);
  }

  function secret(el) {
    return tagOf(el) == "input" && /^(password|hidden)$/i.test(el.type);
  }

  // True for clicks that must not be recorded at all.
  function ignored(el) {
    return !el || secret(el) || !!el.closest("[data-cs-ignore]");
  }

  // Nearest interactive element: the element itself or one of its 10 nearest ancestors.
  function clickable(el) {
    for (var i = 0; el && i <= 10; i++, el = el.parentElement) {
      if (el.nodeType == 1 && el.matches(CLICKABLE)) return el;
    }
    return null;
  }

  function textOf(el) {
    var t = tagOf(el);
    if (t == "input") return /^(button|submit)$/i.test(el.type) ? el.value : "";
    if (t == "select" || t == "textarea" || el.isContentEditable || el.querySelector(NO_TEXT)) return "";
    return el.textContent;
  }

  function describe(el, names) {
    var o = { tag: tagOf(el) },
      c = classesOf(el),
      text = clip(textOf(el) || el.getAttribute("aria-label"), 128),
      href = o.tag == "a" && el.href;
    if (el.id) o.id = clip(el.id, 128);
    if (c.length) o.classes = c;
    if (text) o.text = text;
    if (href && typeof href == "string") o.href = redact(href, names).slice(0, 2048); // not SVG <a>
    o.selector = selectorOf(el);
    return o;
  }

  // The newest `max` events by ts (ISO strings sort in time order).
  function bound(list, max) {
    return list
      .slice()
      .sort(function (a, b) {
        return (a.ts > b.ts) - (a.ts < b.ts);
      })
      .slice(-max);
  }

  // Retry delay after n failures: 1 s, 2 s, 4 s ... 60 s, each with jitter to 50-100 %.
  function backoff(n, random) {
    var base = Math.min(1000 * Math.pow(2, n), 60000);
    return base / 2 + (random * base) / 2;
  }

  // The microsecond of an event recorded at clock time ms after one at `last`: events within
  // one millisecond (a click and the SPA page view it causes) count up from it, in order.
  function stamp(ms, last) {
    var us = ms * 1000;
    return us <= last && last - us < 1000 ? last + 1 : us;
  }

  // ISO-8601 with six decimals: "2026-11-25T09:13:42.123004Z".
  function iso(us) {
    return new Date(Math.floor(us / 1000)).toISOString().slice(0, -1) + String(1e3 + (us % 1e3)).slice(1) + "Z";
  }

  // href without the query and fragment parameters that look like secrets: a name matching
  // SECRET or listed in `names` (data-redact); "-name" there keeps that one.
  function redact(href, names) {
    return href
      .replace(/([?&#])([^?&#=]+)=[^&#]*/g, function (m, sep, k) {
        k = k.toLowerCase();
        return names.indexOf("-" + k) < 0 && (SECRET.test(k) || names.indexOf(k) >= 0) ? sep : m;
      })
      .replace(/[?&#]+$|[?&]+(?=#)|([?&#])&+/g, "$1");
  }

  // A fraction cut to [0, 1] (NaN: 0) and rounded to n decimals (n = 10, 100 ...).
  function frac(v, n) {
    return Math.round((v > 1 ? 1 : v > 0 ? v : 0) * n) / n;
  }

  // Where a click landed: x as a fraction of the document width, y in px from the document
  // top, ex/ey within the element's box r (getBoundingClientRect()).
  function position(ev, r, width) {
    var p = { x: frac(ev.pageX / width, 1e4), y: Math.round(Math.min(ev.pageY > 0 ? ev.pageY : 0, 1e6)) };
    if (r.width) p.ex = frac((ev.clientX - r.left) / r.width, 1e3);
    if (r.height) p.ey = frac((ev.clientY - r.top) / r.height, 1e3);
    return p;
  }

  // Rage clicks: list holds the burst so far ({x, y, t}: page px, ms), c the new click.
  // A click within 1 s and 30 px of the burst's first click joins it, any other starts a
  // new one. Returns [c is the 3rd or later of its burst, the burst].
  function rage(list, c) {
    var f = list[0];
    list = f && c.t - f.t <= SECOND && Math.hypot(c.x - f.x, c.y - f.y) <= 30 ? list.concat([c]) : [c];
    return [list.length > 2, list];
  }

  // Scroll depth in percent: the part of a document of height h seen down to the bottom of
  // a viewport of height vh scrolled to y; a page shorter than the viewport is 100.
  function depth(y, vh, h) {
    return Math.round(frac(((y > 0 ? y : 0) + vh) / h, 100) * 100);
  }

  function chunks(list, size) {
    for (var out = [], i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
    return out;
  }

  // Anything other than success or a permanent rejection is retried.
  function retryable(status) {
    return !status || status == 408 || status == 429 || status >= 500;
  }

  // crypto.randomUUID (secure contexts only), else a v4 from getRandomValues (everywhere).
  function uuid(c) {
    if (c.randomUUID) return c.randomUUID();
    var b = c.getRandomValues(new Uint8Array(16)), i = 0;
    b[6] = (b[6] & 15) | 64; // version 4
    b[8] = (b[8] & 63) | 128; // variant 10
    return "xxxx-xx-xx-xx-xxxxxx".replace(/x/g, function () {
      return (b[i++] + 256).toString(16).slice(1); // a byte, two hex digits
    });
  }

  // Test hook for tests/tracker; the build removes it from tracker.min.js (CS_BUILD).
  if (typeof CS_BUILD == "undefined" && w.__csTest) {
    w.__csTest({
      dnt: dnt, clip: clip, selectorOf: selectorOf, ignored: ignored, clickable: clickable,
      textOf: textOf, describe: describe, bound: bound, backoff: backoff, chunks: chunks,
      retryable: retryable, uuid: uuid, stamp: stamp, iso: iso, redact: redact, CLICKABLE: CLICKABLE,
      position: position, rage: rage, depth: depth,
    });
  }
  if (w.document) start();

  // ---- the tracker ----

  function start() {
    var d = document, nav = navigator, script = d.currentScript, scripts, i;
    if (!script) {
      scripts = d.getElementsByTagName("script");
      for (i = scripts.length; i-- && !script; ) if (/tracker/.test(scripts[i].src)) script = scripts[i];
    }
    var attr = function (name) {
      return script && script.getAttribute("data-" + name);
    };
    var site = attr("site"), stub = w.clickstream;
    if (!site || (stub && typeof stub.track == "function")) return; // no key, or loaded twice

    var origin = new URL(script.src, location.href).origin;
    var endpoint = attr("endpoint") || origin + "/collect";
    var interval = +attr("flush-interval") || 5000;
    var batch = +attr("batch-size") || 20;
    var names = (attr("redact") || "").toLowerCase().split(/[\s,]+/);
    var crypto = w.crypto;
    var queue = [], last = 0, stopped = 0, retryTimer = 0, retrying = 0, failures = 0, lastUrl, lastClick, lastClickAt, userId, anonId;
    // clicks watched for being dead, the rage burst, the page view and its scroll depth
    var pending = [], burst = [], observer, view, fold, deepest, measuring, left;
    var de = d.documentElement;

    function noop() {}
    var api = {
      track: noop, identify: noop, page: noop, optOut: noop, optIn: noop,
      flush: function () {
        return Promise.resolve();
      },
    };
    w.clickstream = api;
    // One of the tracker's own scripts, loaded beside it.
    function load(name) {
      var s = d.createElement("script");
      s.src = origin + "/static/sessions_app/" + name;
      return (d.head || de).appendChild(s);
    }
    // The heatmap overlay, for the site's analysts: load it, record nothing.
    var heatmap = /[#&]cs-heatmap=([\w.-]+)(&|$)/.exec(location.hash);
    if (heatmap) {
      var s = load("heatmap.js");
      s.setAttribute("data-token", heatmap[1]);
      s.setAttribute("data-site", site);
      return s.setAttribute("data-api", origin);
    }
    if (dnt(nav, w)) return; // a no-op API: nothing captured, stored or sent

    // ---- first-party storage; every access may throw (private modes, sandboxes) ----
    function get(k) {
      try {
        return localStorage.getItem(k);
      } catch (e) {
        return null;
      }
    }
    function set(k, v) {
      try {
        localStorage.setItem(k, v);
        return 1;
      } catch (e) {}
    }
    function del(k) {
      try {
        localStorage.removeItem(k);
      } catch (e) {}
    }
    function cookie(value, maxAge) {
      try {
        if (value == null) return (d.cookie.match(/(?:^|;\s*)cs_aid=([\w-]+)/) || [])[1];
        d.cookie = "cs_aid=" + value + "; Max-Age=" + maxAge + "; Path=/; SameSite=Lax" +
          (location.protocol == "https:" ? "; Secure" : "");
      } catch (e) {}
    }
    function anonymousId() {
      if (!anonId) {
        anonId = get("cs_aid") || cookie() || uuid(crypto);
        if (!set("cs_aid", anonId)) cookie(anonId, 31536000);
      }
      return anonId;
    }
    function off() {
      return stopped || get("cs_optout") == "1";
    }
    function readRetry() {
      try {
        var list = JSON.parse(get(RETRY_KEY));
        return Array.isArray(list) ? list : [];
      } catch (e) {
        return [];
      }
    }
    function writeRetry(list) {
      list.length ? set(RETRY_KEY, JSON.stringify(bound(list, RETRY_MAX))) : del(RETRY_KEY);
    }

    // ---- capture ----
    // The event, queued unless `hold` (a click watched for being dead).
    function record(type, fields, hold) {
      if (off()) return;
      last = stamp(Date.now(), last);
      var e = { id: uuid(crypto), type: type, ts: iso(last), anonymous_id: anonymousId(),
        url: redact(location.href, names).slice(0, 2048), title: clip(d.title, 512) };
      if (userId) e.user_id = userId;
      for (var k in fields) if (fields[k] != null && fields[k] !== "") e[k] = fields[k];
      hold || push(e);
      return (api.last = e); // the newest event: the replay recorder names its id
    }

    // Into the queue in ts order (a held click comes in after later events).
    function push(e) {
      if (off()) return;
      for (var i = queue.length; i && queue[i - 1].ts > e.ts; i--);
      queue.splice(i, 0, e);
      if (queue.length >= batch) flush();
    }

    // Something happened: the clicks being watched are not dead, queue them.
    function settle() {
      observer && observer.disconnect();
      pending.splice(0).forEach(push);
    }

    // Scroll depth now; not while the document is still being parsed (its height would
    // be too small, its depth too large).
    function measure() {
      measuring = 0;
      var p = d.readyState != "loading" && depth(w.scrollY, w.innerHeight, Math.max(de.scrollHeight, d.body ? d.body.scrollHeight : 0));
      if (p > deepest) deepest = p;
    }

    function frame() {
      measuring || (measuring = requestAnimationFrame(measure));
    }

    function leave() {
      // A reading only when it is new: visibilitychange and pagehide both end a page.
      if (!view || deepest === left) return;
      left = deepest;
      record("custom", { name: "$pageleave", url: view.url, title: view.title, viewport: view.viewport,
        props: { pageview: view.id, scroll: deepest, fold: fold } });
    }

    function hide() {
      settle();
      measure();
      leave();
      flush(1);
    }

    function page() {
      var url = location.href;
      if (url == lastUrl || off()) return;
      lastUrl = url;
      settle();
      leave();
      view = record("pageview", { referrer: redact(d.referrer, names).slice(0, 2048), viewport: w.innerWidth });
      fold = w.innerHeight;
      deepest = 0;
      left = -1;
      frame(); // in the next frame: an SPA has rendered the new page by then
    }

    function onClick(ev) {
      var t = ev.target;
      if (t && t.nodeType != 1) t = t.parentElement; // a text node in old browsers
      var el = clickable(t) || t;
      // A click on a <label> is followed by a synthetic click on its control: count one.
      if (ignored(t) || ignored(el) || (el == lastClick && ev.timeStamp - lastClickAt < 50)) return;
      lastClick = el;
      lastClickAt = ev.timeStamp;
      var r = rage(burst, { x: ev.pageX, y: ev.pageY, t: ev.timeStamp });
      burst = r[1];
      var e = record("click", { element: describe(el, names), viewport: w.innerWidth, rage: r[0] || null,
        // A click from the keyboard (detail 0) has no position.
        pos: ev.detail !== 0 ? position(ev, el.getBoundingClientRect(), de.scrollWidth || w.innerWidth) : null }, 1);
      if (!e) return;
      pending.length || observer.observe(de, { childList: true, subtree: true, attributes: true, characterData: true });
      pending.push(e);
      setTimeout(function () {
        var i = pending.indexOf(e);
        if (i < 0) return; // queued already
        pending.splice(i, 1);
        pending.length || observer.disconnect();
        e.dead = true;
        push(e);
      }, SECOND);
    }

    // ---- sending ----
    // One request of at most 50 events. Resolves to true when the events are done with
    // (sent, or rejected for good); retryable failures go to the retry store. Events sent
    // from the store stay there until they are done with, so a page closed mid-retry
    // loses none (a resend is a duplicate the collector counts once).
    function send(events, beacon, stored) {
      var body = JSON.stringify({ site: site, sent_at: new Date().toISOString(), events: events });
      var blob = new Blob([body], { type: "text/plain" });
      try {
        if (beacon && nav.sendBeacon && nav.sendBeacon(endpoint, blob)) return Promise.resolve(true);
      } catch (e) {}
      return new Promise(function (resolve) {
        // Browsers refuse keepalive bodies over 64 KiB (all in flight together).
        resolve(fetch(endpoint, { method: "POST", body: body, keepalive: blob.size < 60000,
          headers: { "Content-Type": "text/plain" }, credentials: "omit" }));
      }).then(
        function (r) { return r.status; },
        function () { return 0; }
      ).then(function (status) {
        var done = !retryable(status) || off(), ids = {};
        events.forEach(function (e) { ids[e.id] = 1; });
        if (stored ? done : !done) {
          writeRetry(stored ? readRetry().filter(function (e) { return !ids[e.id]; }) : readRetry().concat(events));
        }
        return done;
      });
    }

    function sendAll(events, beacon, stored) {
      return Promise.all(chunks(events, PER_REQUEST).map(function (c) {
        return send(c, beacon, stored);
      })).then(function (results) {
        return results.indexOf(false) < 0;
      });
    }

    function flush(beacon) {
      var events = queue.splice(0);
      if (!events.length || off()) return Promise.resolve();
      return sendAll(events, beacon).then(function (ok) {
        ok || scheduleRetry();
      });
    }

    function scheduleRetry() {
      if (!retryTimer) retryTimer = setTimeout(retry, backoff(failures++, Math.random()));
    }

    function retry() {
      retryTimer = 0;
      var events = readRetry();
      if (retrying || off() || !events.length) return;
      retrying = 1;
      sendAll(events, 0, 1).then(function (ok) {
        retrying = 0;
        if (ok) failures = 0;
        if (!ok || readRetry().length) scheduleRetry();
      });
    }

    // ---- public API ----
    api.track = function (name, props) {
      if (!name) return;
      try {
        props = props && typeof props == "object" && !Array.isArray(props) ? JSON.parse(JSON.stringify(props)) : null;
      } catch (e) {
        props = null; // not serializable (cycles, BigInt)
      }
      record("custom", { name: clip(name, 128), props: props });
    };
    api.identify = function (id) {
      id = clip(id, 256);
      if (id == (userId || "") || off()) return; // unchanged: no new $identify
      userId = id;
      if (!id) return del("cs_uid"); // identify(null): forget the user (log out)
      set("cs_uid", id);
      record("custom", { name: "$identify" });
    };
    api.page = page;
    // The vitals script's (vitals.js): one $vitals event of the page view on screen, sent now.
    api.vitals = function (props) {
      props.pageview = view && view.id;
      view && record("custom", { name: "$vitals", url: view.url, title: view.title, viewport: view.viewport, props: props });
      flush(1);
    };
    api.flush = function () {
      return flush();
    };
    api.optOut = function () {
      set("cs_optout", "1");
      stopped = 1;
      settle(); // drops the clicks being watched
      queue = [];
      view = 0;
      clearTimeout(retryTimer);
      retryTimer = 0;
      ["cs_retry", "cs_aid", "cs_uid"].forEach(del);
      cookie("", 0);
      anonId = userId = "";
    };
    api.optIn = function () {
      del("cs_optout");
      stopped = 0;
    };

    // ---- start ----
    userId = get("cs_uid") || "";
    if (attr("auto") != "false") {
      ["pushState", "replaceState"].forEach(function (m) {
        var orig = history[m];
        history[m] = function () {
          var r = orig.apply(this, arguments);
          page();
          return r;
        };
      });
      w.addEventListener("popstate", page);
      w.addEventListener("hashchange", page);
      observer = new MutationObserver(settle);
      d.addEventListener("click", onClick, true);
      d.addEventListener("input", settle, true);
      d.addEventListener("change", settle, true);
    }
    w.addEventListener("scroll", frame, { passive: true });
    d.addEventListener("visibilitychange", function () {
      d.visibilityState == "hidden" && hide();
    });
    w.addEventListener("pagehide", hide);
    setInterval(function () {
      flush();
    }, interval);

    // Calls made before load (clickstream = [["track", "x", {}], ...]): identity and
    // consent first so that the first page view carries them, then the rest in order.
    var calls = stub && stub.length ? [].slice.call(stub) : [];
    var early = /^(identify|optOut|optIn)$/;
    var replay = function (first) {
      calls.forEach(function (c) {
        if (c && early.test(c[0]) == first && api[c[0]]) api[c[0]].apply(api, [].slice.call(c, 1));
      });
    };
    replay(true);
    if (attr("auto") != "false") page();
    replay(false);
    if (readRetry().length) scheduleRetry(); // events a previous page could not send
    if (attr("vitals")) load("vitals.min.js"); // the site measures web vitals (docs/vitals.md)
    // Session replay (docs/replay.md): the recorder, for the visitors in the site's sample
    // (data-replay percent, by the anonymous id: a visitor's sessions are all in or out).
    if (!off() && attr("replay") > parseInt(anonymousId(), 16) % 100) load("replay.min.js");
  }
})(typeof window == "object" ? window : this);
