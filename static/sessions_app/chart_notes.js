// Annotations on the time charts (sessions_app/_annotations.html): a uPlot plugin that
// draws each note of the data island {{ notes.island|json_script:"chart-notes-data" }}
// ({zone, notes: [{id, day, end_day, label, note, author?, start, end}]}, start/end in
// UTC) as a marker: a dashed line at its bucket (a chart by hour: the day's midnight) or
// a band over a range's buckets, with a flag at the foot of the plot. The flag is a
// button: hovering, focusing or tapping it shows the note. While "Add note" is open, a
// click on the chart picks its bucket's day for the form.
//
//   ChartNotes.plugin({starts: [bucket starts, UTC seconds]})       a time axis
//   ChartNotes.plugin({days: ["YYYY-MM-DD", ...], xs: [0, 1, ...]})  an index axis of
//                                                                    day-labelled periods
//   focusable: false   the flags take no Tab stop (several charts of one page)
//
// The charts' drawings are aria-hidden (a table holds their numbers), so the markers'
// layer is laid over the plot from the first ancestor that is not: the flags stay
// reachable. Load this before the chart's script (deferred scripts run in order).
(function () {
  "use strict";
  var island = document.getElementById("chart-notes-data");
  var data = island ? JSON.parse(island.textContent) : null;
  var notes = (data && data.notes) || [];
  var zone = (data && data.zone) || "UTC";
  var dayOf = new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" });

  // The index of the last bucket at or before `at` (0 when all are after it).
  function bucketAt(keys, at) {
    var found = 0;
    for (var i = 0; i < keys.length; i++) { if (keys[i] <= at) found = i; else break; }
    return found;
  }
  // [first, last] bucket index of a note: by instant on a time axis, by day string on an
  // index axis of days; last > first only for a range.
  function span(note, opts) {
    if (opts.days) {
      var a = bucketAt(opts.days, note.day);
      return [a, note.end_day ? Math.max(a, bucketAt(opts.days, note.end_day)) : a];
    }
    var start = Date.parse(note.start) / 1000, end = Date.parse(note.end) / 1000 - 1;
    var first = bucketAt(opts.starts, start);
    return [first, note.end_day ? Math.max(first, bucketAt(opts.starts, end)) : first];
  }
  function text(note) {
    return note.label + ": " + note.note + (note.author ? " (" + note.author + ")" : "");
  }
  function element(tag, className, parent) {
    var found = document.createElement(tag);
    found.className = className;
    parent.appendChild(found);
    return found;
  }

  // The layer over the plot: in the first ancestor of the drawing that is not aria-hidden.
  function layerFor(u) {
    if (u._notes) return u._notes;
    var hidden = u.root.closest("[aria-hidden=true]");
    var host = hidden ? hidden.parentElement : u.root;
    host.classList.add("chart-notes-host");
    var layer = element("div", "chart-note-layer", host);
    var marks = element("div", "chart-note-marks", layer);
    var tip = element("div", "chart-note-tip", layer);
    tip.hidden = true;
    u._notes = { host: host, layer: layer, marks: marks, tip: tip };
    return u._notes;
  }

  function show(u, flag, note) {
    var tip = layerFor(u).tip;
    tip.textContent = "";
    element("div", "tip-bucket", tip).textContent = note.label + (note.author ? " · " + note.author : "");
    element("div", "tip-note", tip).textContent = note.note;
    tip.hidden = false;
    var layer = layerFor(u).layer.getBoundingClientRect(), box = flag.getBoundingClientRect();
    var room = layerFor(u).host.getBoundingClientRect();
    var left = box.left - layer.left + box.width / 2 - tip.offsetWidth / 2;
    // Within the host's width (the layer may start inside it).
    var least = room.left - layer.left, most = room.right - layer.left - tip.offsetWidth;
    tip.style.left = Math.max(least, Math.min(most, left)) + "px";
    tip.style.top = (box.top - layer.top - tip.offsetHeight - 4) + "px";
  }
  function hide(u) { layerFor(u).tip.hidden = true; }

  // The lowest level (0: the foot of the plot) where a flag at x keeps a flag's width
  // from the flags placed: a touch target of its own, never under another.
  var FLAG = 26;
  function free(flags, x) {
    for (var level = 0; ; level++) {
      var taken = flags.some(function (f) { return f[1] === level && Math.abs(f[0] - x) < FLAG; });
      if (!taken) return level;
    }
  }

  function place(u, opts) {
    var parts = layerFor(u);
    var over = u.over.getBoundingClientRect(), host = parts.host.getBoundingClientRect();
    var style = parts.layer.style;
    style.left = (over.left - host.left) + "px";
    style.top = (over.top - host.top) + "px";
    style.width = over.width + "px";
    style.height = over.height + "px";
    parts.marks.textContent = "";
    hide(u);
    var xs = opts.xs || opts.starts;
    var flags = [];  // [x, level] of the flags placed
    notes.forEach(function (note) {
      var at = span(note, opts);
      var x0 = Math.round(u.valToPos(xs[at[0]], "x")), x1 = Math.round(u.valToPos(xs[at[1]], "x"));
      if (at[1] > at[0]) {
        var band = element("div", "chart-note-band", parts.marks);
        band.style.left = x0 + "px";
        band.style.width = Math.max(2, x1 - x0) + "px";
      }
      element("div", "chart-note-line", parts.marks).style.left = x0 + "px";
      var level = free(flags, x0);
      flags.push([x0, level]);
      var flag = element("button", "chart-note", parts.marks);
      flag.type = "button";
      flag.dataset.note = note.id;
      flag.style.left = x0 + "px";
      // A crowded chart piles its flags up to the plot's top, then overlaps them there.
      flag.style.bottom = Math.min(level, Math.floor((over.height - FLAG) / FLAG)) * FLAG + "px";
      flag.setAttribute("aria-label", "Note, " + text(note));
      if (opts.focusable === false) flag.tabIndex = -1;
      flag.addEventListener("mouseenter", function () { show(u, flag, note); });
      flag.addEventListener("focus", function () { show(u, flag, note); });
      flag.addEventListener("click", function () { flag.focus(); show(u, flag, note); });
      flag.addEventListener("mouseleave", function () { if (document.activeElement !== flag) hide(u); });
      flag.addEventListener("blur", function () { hide(u); });
    });
  }

  // While "Add note" is open, a click on the chart sets the form's day to its bucket's.
  function pick(u, opts, event) {
    var form = document.getElementById("note-add");
    var input = document.getElementById("note-day");
    if (!form || !form.open || !input) return;
    var i = u.posToIdx(event.clientX - u.over.getBoundingClientRect().left);
    if (i === null || i === undefined || i < 0) return;
    var day = opts.days ? opts.days[i] : dayOf.format(new Date(opts.starts[i] * 1000));
    if (!day) return;
    input.value = day;
    var words = document.getElementById("note-text");
    if (words) words.focus();
  }

  window.ChartNotes = {
    plugin: function (opts) {
      return {
        hooks: {
          ready: [function (u) { u.over.addEventListener("click", function (event) { pick(u, opts, event); }); }],
          // After each drawing (the first, a resize): the scales are the drawn ones.
          draw: [function (u) { place(u, opts); }],
          destroy: [function (u) { if (u._notes) u._notes.layer.remove(); u._notes = null; }],
        },
      };
    },
  };
})();
