// The dashboard's main chart (templates/sessions_app/_chart.html), drawn with uPlot
// (npm, served from static/vendor/uplot/) from the chart data island
// {{ chart|json_script:"dashboard-chart" }} (ARCHITECTURE.md › Charts): the selected
// metric over the period's buckets, the comparison period as a faint dashed line, axes
// and time labels in the site's time zone, a hover tooltip (bucket, value, comparison,
// change), "No data in this range" when there is nothing to draw, and a visually hidden
// table of the values for screen readers. Clicking a KPI card (a[data-metric]) charts
// its metric in place; history.replaceState keeps `metric` in the URL. The period's
// annotations are drawn on it by chart_notes.js.
(function () {
  "use strict";
  var island = document.getElementById("dashboard-chart");
  var root = document.getElementById("main-chart");
  if (!island || !root || typeof uPlot === "undefined") return;
  var chart = JSON.parse(island.textContent);
  var frame = root.querySelector(".chart-frame");
  var empty = root.querySelector(".chart-empty");
  var title = root.querySelector(".chart-title");
  var table = root.querySelector(".chart-table");
  var tip = root.querySelector(".chart-tip");
  var HEIGHT = 260;
  var plot = null;
  var zone = chart.zone || "UTC";
  var xs = chart.buckets.map(function (b) { return Date.parse(b) / 1000; });

  var counts = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
  var ratios = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  var bucketFormats = {
    hour: { weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit", hourCycle: "h23" },
    day: { weekday: "short", day: "numeric", month: "short", year: "numeric" },
    month: { month: "long", year: "numeric" },
  };
  var bucketFormat = new Intl.DateTimeFormat("en-GB", Object.assign({ timeZone: zone }, bucketFormats[chart.grain] || bucketFormats.day));

  var dayTick = new Intl.DateTimeFormat("en-GB", { timeZone: zone, day: "numeric", month: "short" });
  var hourTick = new Intl.DateTimeFormat("en-GB", { timeZone: zone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
  var monthTick = new Intl.DateTimeFormat("en-GB", { timeZone: zone, month: "short", year: "numeric" });
  // Time ticks in the site's zone: hours as 14:00 (a midnight as its day), days as 1 Nov,
  // months as Nov 2026.
  function timeTicks(u, splits) {
    return splits.map(function (ts) {
      var at = new Date(ts * 1000);
      if (chart.grain === "month") return monthTick.format(at);
      if (chart.grain === "hour") {
        var hour = hourTick.format(at);
        return hour === "00:00" ? dayTick.format(at) : hour;
      }
      return dayTick.format(at);
    });
  }

  // Days and months: ticks on the buckets' own starts (every n-th, about one per 64 px),
  // so no label repeats a day and months start on the 1st in the site's zone.
  function bucketSplits(u) {
    var step = Math.max(1, Math.ceil(xs.length / Math.max(1, Math.floor(u.width / 64))));
    return xs.filter(function (x, i) { return i % step === 0; });
  }

  function duration(seconds) {
    var s = Math.round(seconds);
    if (s < 60) return s + "s";
    var m = Math.floor(s / 60), h = Math.floor(m / 60);
    return h ? h + "h " + String(m % 60).padStart(2, "0") + "m" : m + "m " + String(s % 60).padStart(2, "0") + "s";
  }
  function format(kind, value) {
    if (value === null || value === undefined || isNaN(value)) return "–";
    if (kind === "percent") return (value * 100).toFixed(1) + "%";
    if (kind === "seconds") return duration(value);
    if (kind === "ratio") return ratios.format(value);
    return counts.format(value);
  }
  function change(now, before) {
    if (now === null || before === null || now === undefined || before === undefined) return "";
    if (before === 0) return now === 0 ? "no change" : "new";
    var pct = (now - before) / Math.abs(before) * 100;
    return (pct > 0 ? "+" : pct < 0 ? "−" : "±") + Math.abs(pct).toFixed(1) + "%";
  }
  function bucketLabel(iso) { return iso ? bucketFormat.format(new Date(Date.parse(iso))) : ""; }
  function metricOf(key) { return (chart.metrics && chart.metrics[key]) || { label: key, format: "count" }; }
  function valuesOf(series, key) {
    var values = (series && series[key]) || [];
    return xs.map(function (_, i) { var v = values[i]; return v === undefined ? null : v; });
  }
  function hasData(values) {
    return values.some(function (v) { return v !== null && v !== 0; });
  }

  function tableFor(key, current, previous) {
    var kind = metricOf(key).format;
    var rows = ['<caption>' + escapeHtml(metricOf(key).label) + ' per ' + chart.grain + ' (' + escapeHtml(zone) + ')</caption>',
      "<thead><tr><th scope=\"col\">Bucket</th><th scope=\"col\">Value</th>" +
      (previous ? "<th scope=\"col\">Comparison</th><th scope=\"col\">Change</th>" : "") + "</tr></thead><tbody>"];
    xs.forEach(function (_, i) {
      var sofar = i === chart.partial;
      rows.push("<tr><th scope=\"row\">" + escapeHtml(bucketLabel(chart.buckets[i])) + (sofar ? " (so far)" : "") + "</th><td>" +
        format(kind, current[i]) + "</td>" + (previous ? "<td>" + format(kind, previous[i]) + "</td><td>" +
        (sofar ? "–" : change(current[i], previous[i])) + "</td>" : "") + "</tr>");
    });
    table.innerHTML = rows.join("") + "</tbody>";
  }
  function escapeHtml(text) {
    return String(text).replace(/[&<>"]/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c];
    });
  }

  function showTip(u, key, current, previous) {
    var i = u.cursor.idx;
    if (i === null || i === undefined || u.cursor.left < 0) { tip.hidden = true; return; }
    var kind = metricOf(key).format;
    var sofar = i === chart.partial;
    var state = sofar ? "so far" : chart.states && chart.states[i] !== "sealed" ? chart.states[i] : "";
    var lines = ['<div class="tip-bucket">' + escapeHtml(bucketLabel(chart.buckets[i])) +
      (state ? " · " + escapeHtml(state) : "") + "</div>",
      '<div class="tip-value"><span class="key now"></span>' + escapeHtml(metricOf(key).label) + ": <strong>" + format(kind, current[i]) + "</strong></div>"];
    if (previous) {
      var then = chart.comparison.buckets ? bucketLabel(chart.comparison.buckets[i]) : "comparison";
      lines.push('<div class="tip-compare"><span class="key before"></span>' + escapeHtml(then) + ": " + format(kind, previous[i]) + "</div>");
      // A bucket still in progress is not set against a whole one.
      var delta = sofar ? "" : change(current[i], previous[i]);
      if (delta) lines.push('<div class="tip-change">' + delta + "</div>");
    }
    tip.innerHTML = lines.join("");
    tip.hidden = false;
    var left = u.valToPos(xs[i], "x") + u.over.offsetLeft;
    var width = tip.offsetWidth;
    var room = frame.clientWidth;
    tip.style.left = Math.max(0, Math.min(room - width, left + 12 > room - width ? left - width - 12 : left + 12)) + "px";
    tip.style.top = (u.over.offsetTop + 8) + "px";
  }

  function draw(key) {
    var metric = metricOf(key);
    var current = valuesOf(chart.series, key);
    var previous = chart.comparison ? valuesOf(chart.comparison.series, key) : null;
    title.textContent = metric.label;
    root.dataset.metric = key;
    tableFor(key, current, previous);
    if (plot) { plot.destroy(); plot = null; }
    tip.hidden = true;
    var any = hasData(current) || (previous && hasData(previous));
    empty.hidden = !!any;
    frame.hidden = !any;
    if (!any) return;
    var series = [{}, {
      label: metric.label, stroke: "#2563eb", width: 2, fill: "rgba(37, 99, 235, 0.08)",
      points: { show: xs.length <= 62 },
    }];
    var data = [xs, current];
    var partial = chart.partial;
    if (partial !== null && partial !== undefined && partial > 0) {
      // The bucket still in progress is drawn dashed from the last whole one: "so far".
      data[1] = current.map(function (v, i) { return i === partial ? null : v; });
      series.push({ label: "So far", stroke: "#2563eb", width: 2, dash: [4, 4], points: { show: xs.length <= 62 } });
      data.push(current.map(function (v, i) { return i === partial || i === partial - 1 ? v : null; }));
    }
    if (previous) {
      series.push({ label: "Comparison", stroke: "rgba(100, 116, 139, 0.55)", width: 1.5, dash: [5, 4], points: { show: false } });
      data.push(previous);
    }
    // The axes take the design tokens (app.css), so the chart follows light and dark mode.
    var style = getComputedStyle(document.documentElement);
    var token = function (name, fallback) { return style.getPropertyValue(name).trim() || fallback; };
    var ink = token("--muted", "#555"), rule = token("--line", "#eee");
    var yFormat = function (u, splits) { return splits.map(function (v) { return format(metric.format, v); }); };
    plot = new uPlot({
      width: Math.max(280, frame.clientWidth), height: HEIGHT,
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1000), zone); },
      legend: { show: false },
      cursor: { y: false, points: { size: 7 }, drag: { x: false, y: false } },
      scales: { y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; } } },
      axes: [
        { stroke: ink, grid: { stroke: rule }, ticks: { stroke: rule }, values: timeTicks, space: 56,
          splits: chart.grain === "hour" ? undefined : bucketSplits },
        { stroke: ink, grid: { stroke: rule }, ticks: { stroke: rule }, values: yFormat, size: 60 },
      ],
      series: series,
      hooks: { setCursor: [function (u) { showTip(u, key, current, previous); }] },
      // The period's notes as markers (chart_notes.js, loaded before this script).
      plugins: window.ChartNotes ? [window.ChartNotes.plugin({ starts: xs })] : [],
    }, data, frame);
    plot.over.addEventListener("mouseleave", function () { tip.hidden = true; });
  }

  function select(key) {
    document.querySelectorAll("a[data-metric]").forEach(function (card) {
      var on = card.dataset.metric === key;
      card.classList.toggle("selected", on);
      if (on) card.setAttribute("aria-current", "true"); else card.removeAttribute("aria-current");
    });
  }

  document.addEventListener("click", function (event) {
    var card = event.target.closest ? event.target.closest("a[data-metric]") : null;
    if (!card || event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
    if (!(chart.series && card.dataset.metric in chart.series)) return;  // the link loads it
    event.preventDefault();
    var url = new URL(window.location.href);
    url.searchParams.set("metric", card.dataset.metric);
    history.replaceState(null, "", url);
    select(card.dataset.metric);
    draw(card.dataset.metric);
  });

  var resizing = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () {
      if (plot) plot.setSize({ width: Math.max(280, frame.clientWidth), height: HEIGHT });
    }, 100);
  });

  var start = chart.metric && chart.series && chart.metric in chart.series ? chart.metric : Object.keys(chart.series || {})[0];
  select(start);
  draw(start);
  root.classList.add("drawn");
})();
