// The session replay player, in its own document framed by the session timeline page
// (docs/replay.md; session_player.html, its own CSP): rrweb-player
// (npm, served from static/vendor/rrweb-player/) fed from the replay API named in the
// data island {{ replay|json_script:"replay-data" }} ({api, marks: [{t, tag, id}], tags}).
// The first chunks come first and the player starts on them; the rest are streamed in
// after. The click path's events are marks on the progress bar (custom events, colored
// by kind); the ▶ button of a timeline row seeks the player to that event (the timeline
// page's replay_frame.js posts {seek: ms}; this document posts it {height, ready}). A link with
// ?t=<epoch ms> (a rage/dead click sample, a funnel drop-off: the island's `seek`) opens
// the player paused SEEK_LEAD before that moment, once the chunks up to it are loaded.
(function () {
  "use strict";
  var island = document.getElementById("replay-data");
  var root = document.getElementById("replay");
  if (!island || !root || typeof rrwebPlayer === "undefined") return;
  var data = JSON.parse(island.textContent);
  var status = root.querySelector(".replay-status");
  var frame = root.querySelector(".replay-frame");
  var Player = rrwebPlayer.Player; // the UMD build's namespace: {Player, default}
  var player = null, first = 0;
  var SEEK_LEAD = 2000; // ms before the linked moment: the player shows what led to it
  var seek = typeof data.seek === "number" ? data.seek : null;
  var loaded = 0; // the newest recorder event's timestamp loaded so far

  // Open at the linked moment once it is loaded (or the whole recording is, if it ends
  // before): after the player has taken the events added (addEvent is asynchronous).
  function seekLinked(done) {
    if (seek === null || !player || (seek > loaded && !done)) return;
    var at = Math.max(0, seek - SEEK_LEAD - first);
    seek = null;
    setTimeout(function () {
      player.goto(at, false);
      status.textContent = "Paused 2 s before the moment you followed; press play.";
    }, 0);
  }

  function newest(events) {
    events.forEach(function (e) {
      if (e.timestamp > loaded) loaded = e.timestamp;
    });
  }

  // A [data-cs-block] element was recorded as an empty box of its size (rr_width):
  // shown hatched and labelled, so that the analyst sees something was left out.
  var blocked = {
    onBuild: function (node, context) {
      var meta = context.replayer.getMirror().getMeta(node);
      if (meta && meta.attributes && meta.attributes.rr_width) node.classList.add("cs-blocked");
    },
  };
  var BLOCKED_STYLE = [ // one rule an entry (the player inserts each with insertRule)
    ".cs-blocked { background: repeating-linear-gradient(135deg, #e2e8f0 0 6px, #f8fafc 6px 12px)" +
      " !important; outline: 1px dashed #64748b; overflow: hidden; }",
    ".cs-blocked::after { content: 'Hidden from replays'; display: block; padding: 4px 6px;" +
      " font: 12px/1.3 system-ui, sans-serif; color: #334155; }",
  ];

  function get(after) {
    var url = data.api + (after ? "?after=" + encodeURIComponent(after) : "");
    // No request headers: the first answer is the page's preload (same URL, mode and
    // credentials), which a request with other headers would not reuse.
    return fetch(url, { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.json();
    });
  }

  // The timeline's events as rrweb custom events, none before the recording starts.
  function marks(start) {
    return data.marks.map(function (m) {
      return { type: 5, timestamp: Math.max(m.t, start), data: { tag: m.tag, payload: { event: m.id } } };
    });
  }

  // A stylesheet past its retention: the recording plays without it; say so.
  function unstyled(page) {
    if (page.missing_assets && page.missing_assets.length) {
      status.textContent = "Some of the recorded page's stylesheets are no longer stored; it plays without them.";
    }
  }

  function more(after) {
    if (!after) return;
    get(after).then(function (page) {
      unstyled(page);
      page.events.forEach(function (e) {
        player.addEvent(e);
      });
      newest(page.events);
      seekLinked(!page.next);
      more(page.next);
    }, function (e) {
      status.textContent = "The rest of the recording could not be loaded (" + e.message + ").";
    });
  }

  function start(page) {
    if (!page.events.length) {
      status.textContent = "No recording was stored for this session.";
      return;
    }
    first = page.events[0].timestamp;
    var events = page.events.concat(marks(first)).sort(function (a, b) {
      return a.timestamp - b.timestamp;
    });
    var width = Math.max(280, frame.clientWidth);
    player = new Player({
      target: frame,
      props: {
        events: events,
        width: width,
        height: Math.round(width * 0.5625),
        autoPlay: false,
        skipInactive: true,
        speedOption: [1, 2, 4, 8],
        tags: data.tags,
        mouseTail: false,
        plugins: [blocked],
        insertStyleRules: BLOCKED_STYLE,
      },
    });
    status.textContent = "";
    unstyled(page);
    root.classList.add("ready");
    tell({ ready: true });
    newest(page.events);
    seekLinked(!page.next);
    more(page.next);
  }

  get(null).then(start).catch(function (e) {
    status.textContent = "The recording could not be loaded (" + e.message + ").";
  });

  // The timeline page (this origin only) asks for a moment; it is told this document's
  // height (it sizes the frame) and when the player is ready.
  function tell(message) {
    message.height = document.documentElement.scrollHeight;
    if (parent !== window) parent.postMessage(message, location.origin);
  }
  window.addEventListener("message", function (ev) {
    if (ev.origin !== location.origin || ev.source !== parent || !ev.data) return;
    if (player && typeof ev.data.seek === "number") player.goto(Math.max(0, ev.data.seek - first), false);
  });
  new ResizeObserver(function () {
    tell({});
  }).observe(document.body);
})();
