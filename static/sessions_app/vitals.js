/* The tracker's web vitals (docs/vitals.md): loaded by tracker.js when the snippet has
 * data-vitals (the site's "Web vitals" setting), built after Google's web-vitals
 * attribution build into vitals.min.js (scripts/build-tracker.mjs).
 *
 * LCP, INP, CLS, FCP and TTFB as web-vitals reports them (each once a page view: a
 * metric already sent is not sent again), with the element that caused LCP, INP and
 * CLS. They wait until the page is hidden or an SPA navigation leaves it, then go as
 * one $vitals event of the page view on screen (clickstream.vitals), sent at once.
 */
(function (w, webVitals) {
  var cs = w.clickstream, pending = {}, sent = {}, any = 0;
  if (!cs || !cs.vitals || !webVitals) return;
  var ELEMENT = { LCP: "target", INP: "interactionTarget", CLS: "largestShiftTarget" };

  function report(metric) {
    var name = metric.name.toLowerCase(), key = ELEMENT[metric.name], el;
    if (sent[name]) return;
    pending[name] = name == "cls" ? Math.round(metric.value * 1e6) / 1e6 : Math.round(metric.value * 10) / 10;
    el = key && metric.attribution && metric.attribution[key];
    if (el) pending[name + "_el"] = String(el).slice(0, 512);
    any = 1;
  }

  function send() {
    if (!any) return;
    for (var name in pending) sent[name.replace("_el", "")] = 1;
    cs.vitals(pending);
    pending = {};
    any = 0;
  }

  webVitals.onLCP(report);
  webVitals.onINP(report);
  webVitals.onCLS(report);
  webVitals.onFCP(report);
  webVitals.onTTFB(report);
  // After web-vitals' own listeners: what they report on hiding is in this send.
  w.document.addEventListener("visibilitychange", function () {
    w.document.visibilityState == "hidden" && send();
  });
  // Leaving the page: Chromium fires pagehide while the page is still visible and only
  // then visibilitychange, where web-vitals finalises LCP and CLS; sending here would
  // split the page view's vitals in two events. Only a page already hidden sends now.
  w.addEventListener("pagehide", function () {
    w.document.visibilityState == "hidden" && send();
  });
  // An SPA navigation: send before the tracker records the next page view (the history
  // wrappers run before the tracker's; capture listeners before its own).
  ["pushState", "replaceState"].forEach(function (m) {
    var orig = history[m];
    history[m] = function (state, title, url) {
      if (url != null && new URL(url, location.href).href != location.href) send();
      return orig.apply(this, arguments);
    };
  });
  w.addEventListener("popstate", send, true);
  w.addEventListener("hashchange", send, true);
  if (typeof CS_BUILD == "undefined") w.__csVitals = { report: report, send: send, pending: function () { return pending; } };
})(window, typeof webVitals == "object" ? webVitals : null);
