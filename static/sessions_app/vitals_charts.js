// The Performance page's trend (templates/sessions_app/performance.html): one uPlot chart
// per metric from the data island {{ trend|json_script:"vitals-trend-data" }}
// ({grain, zone, buckets: [UTC ISO], series: {metric: [p75 | null]}, metrics: {metric:
// {label, unit, good, poor}}}): the p75 per bucket, Google's good and poor thresholds as
// dashed lines, times in the site's zone, the period's annotations (chart_notes.js);
// "No data in this range" when a metric has none.
(function () {
  "use strict";
  var island = document.getElementById("vitals-trend-data");
  if (!island || typeof uPlot === "undefined") return;
  var trend = JSON.parse(island.textContent);
  var xs = trend.buckets.map(function (b) { return Date.parse(b) / 1000; });
  var zone = trend.zone || "UTC";
  var tick = new Intl.DateTimeFormat("en-GB", trend.grain === "hour"
    ? { timeZone: zone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" }
    : trend.grain === "month" ? { timeZone: zone, month: "short", year: "numeric" }
    : { timeZone: zone, day: "numeric", month: "short" });
  var plots = [];

  function text(unit, v) {
    if (v === null || v === undefined) return "–";
    if (unit !== "ms") return v.toFixed(2);
    return v >= 1000 ? (v / 1000).toFixed(1) + " s" : Math.round(v) + " ms";
  }

  document.querySelectorAll(".vital-chart").forEach(function (figure) {
    var key = figure.dataset.metric, meta = trend.metrics[key] || { unit: "ms" };
    var values = (trend.series[key] || []).map(function (v) { return v === null ? null : v; });
    var frame = figure.querySelector(".chart-frame");
    if (!values.some(function (v) { return v !== null; })) {
      figure.querySelector(".chart-empty").hidden = false;
      return;
    }
    var flat = function (v) { return xs.map(function () { return v; }); };
    var plot = new uPlot({
      width: Math.max(240, frame.clientWidth), height: 160,
      legend: { show: false },
      scales: { x: { time: true } },
      axes: [
        { values: function (u, splits) { return splits.map(function (s) { return tick.format(new Date(s * 1000)); }); } },
        { size: 66, values: function (u, splits) { return splits.map(function (v) { return text(meta.unit, v); }); } },
      ],
      series: [{}, { label: "p75", stroke: "#2563eb", width: 2, spanGaps: false, points: { show: true, size: 6, fill: "#2563eb" } },
        { label: "good", stroke: "rgba(10, 122, 63, 0.6)", dash: [4, 4], width: 1, points: { show: false } },
        { label: "poor", stroke: "rgba(192, 16, 72, 0.6)", dash: [4, 4], width: 1, points: { show: false } }],
      // The period's notes (chart_notes.js); the list under the charts is their keyboard way.
      plugins: window.ChartNotes ? [window.ChartNotes.plugin({ starts: xs, focusable: false })] : [],
    }, [xs, values, flat(meta.good), flat(meta.poor)], frame);
    plots.push([plot, frame]);
  });

  var resizing = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () {
      plots.forEach(function (p) { p[0].setSize({ width: Math.max(240, p[1].clientWidth), height: 160 }); });
    }, 100);
  });
})();
