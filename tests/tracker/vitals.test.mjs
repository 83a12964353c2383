// The tracker's web vitals (docs/vitals.md): the loader (tracker.js and its build) loads
// vitals.min.js only with data-vitals, and vitals.js (run here on a fake web-vitals)
// sends each metric once per page view, with its element, when the page is hidden or an
// SPA navigation leaves it, as a $vitals event of that page view.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import vm from "node:vm";
import { loadPage, MIN_PATH, SOURCE_PATH } from "./harness.mjs";

const VITALS_PATH = join(dirname(fileURLToPath(import.meta.url)), "../../static/sessions_app/vitals.js");

function fakeWebVitals() {
  const callbacks = {};
  const api = {};
  for (const name of ["LCP", "INP", "CLS", "FCP", "TTFB"]) api[`on${name}`] = (fn) => void (callbacks[name] = fn);
  return { api, report: (name, value, attribution = {}) => callbacks[name]({ name, value, attribution }) };
}

function withVitals(file) {
  const page = loadPage(file, { attrs: { site: "cs_test", vitals: "on" } });
  const fake = fakeWebVitals();
  page.window.webVitals = fake.api;
  vm.runInContext(readFileSync(VITALS_PATH, "utf8"), page.window);
  return { page, report: fake.report };
}

const vitalsEvents = (page) => page.events().filter((e) => e.name === "$vitals");

for (const file of [SOURCE_PATH, MIN_PATH]) {
  describe(file.endsWith("min.js") ? "tracker.min.js" : "tracker.js", () => {
    test("vitals.min.js is loaded beside the tracker only with data-vitals", () => {
      const on = loadPage(file, { attrs: { site: "cs_test", vitals: "on" } });
      const srcs = on.document.head.childNodes.map((s) => s.src);
      assert.deepEqual(srcs, ["https://cdn.example/static/sessions_app/vitals.min.js"]);
      const off = loadPage(file);
      assert.deepEqual(off.document.head.childNodes, []);
    });

    test("each metric goes once, with its element, when the page is hidden", async () => {
      const { page, report } = withVitals(file);
      report("TTFB", 212.34);
      report("FCP", 980.06);
      report("LCP", 2410.27, { target: "main>img.hero" });
      report("CLS", 0.0312345678, { largestShiftTarget: "div.banner" });
      page.hide();
      await page.settle();
      let sent = vitalsEvents(page);
      assert.equal(sent.length, 1);
      const pageview = page.events().find((e) => e.type === "pageview");
      assert.deepEqual(sent[0].props, {
        ttfb: 212.3, fcp: 980.1, lcp: 2410.3, lcp_el: "main>img.hero", cls: 0.031235,
        cls_el: "div.banner", pageview: pageview.id,
      });
      assert.equal(sent[0].url, pageview.url);
      report("LCP", 5000, { target: "img.other" }); // sent already: never again
      report("INP", 180, { interactionTarget: "button#buy" });
      page.document.visibilityState = "visible";
      page.hide();
      await page.settle();
      sent = vitalsEvents(page);
      assert.equal(sent.length, 2);
      assert.deepEqual(sent[1].props, { inp: 180, inp_el: "button#buy", pageview: pageview.id });
      page.document.visibilityState = "visible";
      page.hide(); // nothing new: nothing sent
      await page.settle();
      assert.equal(vitalsEvents(page).length, 2);
    });

    test("an SPA navigation sends the page's metrics for it before the next page view", async () => {
      const { page, report } = withVitals(file);
      report("LCP", 1800, { target: "h1" });
      page.window.history.pushState({}, "", "/cart");
      await page.api.flush();
      await page.settle();
      const events = page.events();
      const vitals = events.find((e) => e.name === "$vitals");
      const views = events.filter((e) => e.type === "pageview").sort((a, b) => (a.ts < b.ts ? -1 : 1));
      assert.deepEqual(views.map((v) => v.url), ["https://shop.example/products/1", "https://shop.example/cart"]);
      assert.equal(vitals.props.pageview, views[0].id); // the page it measured, not the next
      assert.equal(vitals.url, "https://shop.example/products/1");
      page.window.history.replaceState({}, "", "/cart"); // the same URL: not a navigation
      report("CLS", 0.2, { largestShiftTarget: "footer" });
      await page.settle();
      assert.equal(page.events().filter((e) => e.name === "$vitals").length, 1);
    });
  });
}
