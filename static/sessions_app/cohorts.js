// The Cohorts page's charts (templates/sessions_app/cohorts.html), drawn with uPlot (npm,
// served from static/vendor/uplot/) from the data island {{ charts|json_script:"cohort-charts" }}:
// each cohort's retention curve (share of its users back n periods later) with the
// average in bold, the lifecycle's new / returning / resurrecting / dormant per period
// as bars with the period's annotations (chart_notes.js), and the stickiness histogram
// (users by days active). The tables below each chart hold the same numbers for screen
// readers and without JavaScript.
(function () {
  "use strict";
  var island = document.getElementById("cohort-charts");
  if (!island || typeof uPlot === "undefined") return;
  var data = JSON.parse(island.textContent);
  if (!data) return;
  var HEIGHT = 240;
  var PALETTE = ["#2563eb", "#16a34a", "#d97706", "#9333ea", "#0891b2", "#dc2626", "#4d7c0f", "#be185d"];

  function width(el) { return Math.max(280, Math.min(el.parentElement.clientWidth, 1100)); }

  function draw(el, opts, series) {
    if (!el) return null;
    opts.width = width(el);
    opts.height = HEIGHT;
    var plot = new uPlot(opts, series, el);
    window.addEventListener("resize", function () { plot.setSize({ width: width(el), height: HEIGHT }); });
    return plot;
  }

  function indexAxis(label) {
    return { label: label, values: function (u, splits) { return splits.map(function (s) { return Number.isInteger(s) ? String(s) : ""; }); } };
  }

  var curves = document.getElementById("curves-chart");
  if (curves && data.average.length) {
    var xs = data.average.map(function (_, i) { return i; });
    var series = [{ label: data.unit }];
    var values = [xs];
    data.curves.slice(-8).forEach(function (c, i) {
      series.push({ label: c.label, stroke: PALETTE[i % PALETTE.length], width: 1 });
      values.push(xs.map(function (_, k) { return k < c.values.length ? c.values[k] : null; }));
    });
    series.push({ label: "Average", stroke: "#111827", width: 3 });
    values.push(data.average);
    draw(curves, {
      scales: { x: { time: false }, y: { range: [0, 100] } },
      axes: [indexAxis(data.unit + "s later"), { label: "% returned", values: function (u, s) { return s.map(function (v) { return v + "%"; }); } }],
      series: series,
    }, values);
  }

  var bars = uPlot.paths && uPlot.paths.bars ? uPlot.paths.bars({ size: [0.7, 60] }) : null;
  // Whole users on a count axis.
  var COUNTS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7];
  var countAxis = { label: "users", incrs: COUNTS, values: function (u, s) { return s.map(function (v) { return v.toLocaleString("en-US"); }); } };

  var life = document.getElementById("lifecycle-chart");
  if (life && data.lifecycle.length) {
    var lx = data.lifecycle.map(function (_, i) { return i; });
    var labels = data.lifecycle.map(function (r) { return r.start.slice(data.unit === "month" ? 0 : 5, data.unit === "month" ? 7 : 10); });
    // Stacked: each bar is drawn from zero to the sum of its kind and the ones below it,
    // tallest first, so the smaller ones cover its lower part; the legend shows each
    // kind's own number. Dormant users go below zero.
    var kinds = [["resurrecting", "#d97706"], ["returning", "#2563eb"], ["new", "#16a34a"], ["dormant", "#9ca3af"]];
    var below = { resurrecting: ["new", "returning", "resurrecting"], returning: ["new", "returning"], "new": ["new"], dormant: ["dormant"] };
    function stacked(kind) {
      return data.lifecycle.map(function (r) { return below[kind].reduce(function (sum, k) { return sum + r[k]; }, 0); });
    }
    draw(life, {
      scales: { x: { time: false } },
      // The period's notes at the periods holding their days (chart_notes.js).
      plugins: window.ChartNotes ? [window.ChartNotes.plugin({
        days: data.lifecycle.map(function (r) { return r.start.slice(0, 10); }), xs: lx,
      })] : [],
      axes: [{ space: 60, incrs: [1, 2, 4, 8, 16], values: function (u, splits) { return splits.map(function (s) { return labels[s] || ""; }); } }, countAxis],
      series: [{ label: data.unit, value: function (u, v) { return v == null ? "--" : labels[v]; } }].concat(kinds.map(function (k) {
        return {
          label: k[0], stroke: k[1], fill: k[1] + "cc", paths: bars, points: { show: false },
          value: function (u, v, si, i) { return i == null ? "--" : String(data.lifecycle[i][k[0]]); },
        };
      })),
    }, [lx].concat(kinds.map(function (k) { return stacked(k[0]); })));
  }

  var sticky = document.getElementById("stickiness-chart");
  if (sticky && data.stickiness.length) {
    var sx = data.stickiness.map(function (_, i) { return i + 1; });
    draw(sticky, {
      scales: { x: { time: false } },
      axes: [indexAxis("days active"), countAxis],
      series: [{ label: "days" }, { label: "users", stroke: "#2563eb", fill: "#2563eb99", paths: bars, points: { show: false } }],
    }, [sx, data.stickiness]);
  }
})();
