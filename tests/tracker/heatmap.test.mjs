// What click heatmaps, scroll depth and rage/dead clicks need, in the fake browser:
// both tracker.js and the built tracker.min.js must pass every test.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { h, loadPage, MIN_PATH, SOURCE_PATH } from "./harness.mjs";

const plain = (x) => JSON.parse(JSON.stringify(x));
const clicks = (page) => page.events().filter((e) => e.type === "click");
const leaves = (page) => page.events().filter((e) => e.name === "$pageleave");

for (const [label, file] of [
  ["tracker.js", SOURCE_PATH],
  ["tracker.min.js", MIN_PATH],
]) {
  describe(label, () => {
    const load = (opts) => loadPage(file, opts);

    test("a click on a plain <p> is recorded: element, viewport, pos", async () => {
      const page = load();
      const p = h("p", { class: "intro" }, "Free shipping over 50 €");
      h("html", {}, h("body", {}, h("main", {}, p)));
      p.rect = { left: 100, top: 20, width: 400, height: 50 };
      page.layout({ scrollWidth: 1600, innerWidth: 1440 });
      page.click(p.childNodes[0], undefined, { pageX: 400, pageY: 1220, clientX: 200, clientY: 30 });
      await page.tick(1000);
      await page.api.flush();
      const [click] = clicks(page);
      assert.deepEqual(plain(click.element), { tag: "p", classes: ["intro"], text: "Free shipping over 50 €", selector: "main > p.intro" });
      assert.equal(click.viewport, 1440);
      assert.deepEqual(plain(click.pos), { x: 0.25, y: 1220, ex: 0.25, ey: 0.2 });
      assert.equal(click.rage, undefined);
      assert.equal(click.dead, true);
    });

    test("pos: the interactive ancestor's box; document width falls back to innerWidth", async () => {
      const page = load();
      const icon = h("svg", {});
      const button = h("button", { id: "menu" }, icon);
      h("body", {}, button);
      button.rect = { left: 10, top: 10, width: 40, height: 0 };
      icon.rect = { left: 20, top: 20, width: 20, height: 20 };
      page.layout({ scrollWidth: 0, innerWidth: 1000 });
      page.click(icon, undefined, { pageX: 30, pageY: 20, clientX: 30, clientY: 20 });
      await page.tick(1000);
      await page.api.flush();
      const [click] = clicks(page);
      assert.equal(click.element.id, "menu");
      assert.deepEqual(plain(click.pos), { x: 0.03, y: 20, ex: 0.5 }, "ey left out: the button is 0 px high");
    });

    test("a click followed by a DOM mutation within 1 s is not dead, and queued at once", async () => {
      const page = load();
      const button = h("button", {}, "Open");
      h("body", {}, button);
      page.click(button);
      const [observer] = page.observers;
      assert.equal(observer.target, page.document.documentElement);
      assert.deepEqual(plain(observer.options), { childList: true, subtree: true, attributes: true, characterData: true });
      await page.tick(500);
      page.mutate();
      await page.settle();
      assert.equal(observer.target, null, "disconnected: no click is watched");
      await page.api.flush();
      const [click] = clicks(page);
      assert.equal(click.dead, undefined);
      await page.tick(1000);
      await page.api.flush();
      assert.equal(clicks(page).length, 1, "queued once");
    });

    test("a click with nothing after it is dead after 1 s, and only then queued", async () => {
      const page = load();
      const button = h("button", {}, "Broken");
      h("body", {}, button);
      page.mutate(); // before the click: no observer is connected, nothing is seen
      page.click(button);
      await page.tick(999);
      await page.api.flush();
      assert.equal(clicks(page).length, 0, "still watched");
      assert.equal(page.observers[0].target, page.document.documentElement);
      await page.tick(1);
      assert.equal(page.observers[0].target, null, "disconnected: no click is watched");
      await page.api.flush();
      assert.equal(clicks(page).length, 1);
      assert.equal(clicks(page)[0].dead, true);
    });

    test("one observer for several watched clicks; each has its own second", async () => {
      const page = load();
      const a = h("p", {}, "a"), b = h("p", {}, "b");
      h("body", {}, a, b);
      page.click(a);
      await page.tick(600);
      page.click(b);
      assert.equal(page.observers.length, 1);
      await page.tick(400); // a's second is over, b is still watched
      await page.api.flush();
      assert.deepEqual(plain(clicks(page).map((c) => [c.element.text, c.dead])), [["a", true]]);
      assert.ok(page.observers[0].target, "still connected for b");
      page.mutate();
      await page.settle();
      await page.api.flush();
      assert.deepEqual(plain(clicks(page).map((c) => [c.element.text, c.dead ?? false])), [["a", true], ["b", false]]);
      assert.equal(page.observers[0].target, null);
    });

    test("input and change events end the watch: not dead", async () => {
      for (const type of ["input", "change"]) {
        const page = load();
        const box = h("input", { type: "checkbox", "data-cs-track": "" });
        h("body", {}, box);
        page.click(box);
        page.fire("document", type, { target: box });
        await page.api.flush();
        assert.equal(clicks(page).length, 1, type);
        assert.equal(clicks(page)[0].dead, undefined, type);
      }
    });

    test("a dead click is queued in ts order, before events recorded after it", async () => {
      const page = load();
      const p = h("p", {}, "text");
      h("body", {}, p);
      page.click(p);
      page.api.track("later");
      await page.tick(1000);
      await page.api.flush();
      const events = page.events();
      assert.deepEqual(plain(events.map((e) => e.name || e.type)), ["pageview", "click", "later"]);
      assert.ok(events[1].ts < events[2].ts);
    });

    test("a click followed by page hide is sent on hide, not dead", async () => {
      for (const how of ["visibilitychange", "pagehide"]) {
        const page = load();
        const link = h("a", { href: "/elsewhere" }, "Elsewhere");
        h("body", {}, link);
        page.click(link);
        if (how === "pagehide") page.fire("window", "pagehide");
        else page.hide();
        await page.settle();
        assert.equal(page.requests.length, 1, how);
        assert.equal(page.requests[0].via, "beacon");
        const sent = page.requests[0].body.events;
        assert.deepEqual(plain(sent.map((e) => e.name || e.type)), ["pageview", "click", "$pageleave"], how);
        assert.equal(sent[1].dead, undefined, how);
        await page.tick(2000);
        assert.equal(page.requests.length, 1, `${how}: nothing left to send`);
      }
    });

    test("rage clicks: the 3rd and later within 1 s and 30 px of the first", async () => {
      const page = load();
      const button = h("button", {}, "Pay");
      h("body", {}, button);
      const at = (x, y) => ({ pageX: x, pageY: y, clientX: x, clientY: y });
      page.click(button, 10000, at(100, 100));
      page.click(button, 10200, at(110, 105));
      page.click(button, 10400, at(95, 100));
      page.click(button, 10900, at(100, 120));
      page.click(button, 11100, at(100, 100)); // 1.1 s after the first: a new burst
      page.click(button, 11200, at(200, 100)); // 100 px away: another
      await page.tick(1000);
      await page.api.flush();
      assert.deepEqual(plain(clicks(page).map((c) => c.rage ?? false)), [false, false, true, true, false, false]);
    });

    test("$pageleave on hide: the page view's id, url, deepest scroll and fold", async () => {
      const page = load({
        before: (w) => Object.assign(w, { innerHeight: 700 }),
        href: "https://shop.example/products/1?token=x",
      });
      page.layout({ scrollHeight: 3500, bodyHeight: 3400 });
      page.scroll(700); // measured in the next animation frame
      page.scroll(1050);
      page.scroll(1400);
      assert.equal(page.timers.filter((t) => t.ms === 16).length, 1, "one frame for many scroll events");
      await page.tick(16);
      page.scroll(0); // back to the top: the deepest point stays
      await page.tick(16);
      page.hide();
      await page.settle();
      const [view] = page.events();
      let [leave] = leaves(page);
      assert.equal(leave.type, "custom");
      assert.equal(leave.url, "https://shop.example/products/1");
      assert.equal(leave.url, view.url);
      assert.deepEqual(plain(leave.props), { pageview: view.id, scroll: 60, fold: 700 });

      // visible again, scrolled further, hidden again: sent again with the new maximum
      page.document.visibilityState = "visible";
      page.scroll(2800);
      page.fire("window", "pagehide"); // measured at hide, frame or not
      await page.settle();
      const all = leaves(page);
      assert.equal(all.length, 2);
      assert.deepEqual(plain(all[1].props), { pageview: view.id, scroll: 100, fold: 700 });
      assert.notEqual(all[1].id, all[0].id);
    });

    test("$pageleave: a page shorter than the viewport is 100", async () => {
      const page = load({ before: (w) => w.document.documentElement && Object.assign(w.document.documentElement, { scrollHeight: 600 }) });
      page.hide();
      await page.settle();
      const [leave] = leaves(page);
      assert.deepEqual(plain(leave.props), { pageview: page.events()[0].id, scroll: 100, fold: 800 });
    });

    test("SPA navigation: $pageleave for the previous URL before the new page view", async () => {
      const page = load();
      page.layout({ scrollHeight: 4000 });
      page.scroll(1200);
      await page.tick(16);
      const link = h("a", { href: "/products/2" }, "Next");
      h("body", {}, link);
      page.click(link);
      page.layout({ scrollHeight: 1600, scrollY: 0 }); // the new page
      page.history.pushState({}, "", "/products/2");
      await page.api.flush();
      const events = page.events();
      assert.deepEqual(plain(events.map((e) => [e.name || e.type, e.url])), [
        ["pageview", "https://shop.example/products/1"],
        ["click", "https://shop.example/products/1"],
        ["$pageleave", "https://shop.example/products/1"],
        ["pageview", "https://shop.example/products/2"],
      ]);
      assert.equal(events[1].dead, undefined, "the navigation ended the watch");
      assert.deepEqual(plain(events[2].props), { pageview: events[0].id, scroll: 50, fold: 800 });
      // measured in the frame after the page view (the SPA has rendered it): 800 of 1600 px
      await page.tick(16);
      page.history.pushState({}, "", "/products/3");
      await page.api.flush();
      const [, second] = leaves(page);
      assert.equal(second.url, "https://shop.example/products/2");
      assert.deepEqual(plain(second.props), { pageview: events[3].id, scroll: 50, fold: 800 });
    });

    test("scroll depth is not measured while the document is being parsed", async () => {
      const page = load({ before: (w) => (w.document.readyState = "loading") });
      page.layout({ scrollHeight: 300 }); // what has been parsed so far: would be 100 %
      page.scroll(0);
      await page.tick(16);
      page.document.readyState = "interactive";
      page.layout({ scrollHeight: 4000 });
      page.hide();
      await page.settle();
      assert.equal(leaves(page)[0].props.scroll, 20);
    });

    test("opted out: no $pageleave, and the clicks being watched are dropped", async () => {
      const page = load();
      const p = h("p", {}, "x");
      h("body", {}, p);
      page.click(p);
      page.api.optOut();
      page.api.optIn();
      await page.tick(1000);
      page.hide();
      await page.settle();
      assert.deepEqual(plain(page.events().map((e) => e.name || e.type)), [], "the page view before opt-out is gone too");
      const later = load({ storage: new Map([["cs_optout", "1"]]) });
      later.click(p);
      later.hide();
      await later.tick(2000);
      assert.equal(later.requests.length, 0);
    });

    test("data-auto=false: no click watching; $pageleave for page() page views", async () => {
      const page = load({ attrs: { site: "cs_test", auto: "false" } });
      assert.equal(page.observers.length, 0);
      for (const type of ["click", "input", "change"]) assert.equal(page.listeners.document.filter((l) => l.type === type).length, 0);
      page.hide();
      await page.settle();
      assert.equal(page.requests.length, 0, "no page view: no $pageleave");
      page.api.page();
      page.hide();
      await page.settle();
      assert.deepEqual(plain(page.events().map((e) => e.name || e.type)), ["pageview", "$pageleave"]);
    });

    for (const [hash, token] of [
      ["#cs-heatmap=abc.DEF_12-3", "abc.DEF_12-3"],
      ["#top&cs-heatmap=t0k", "t0k"],
      ["#cs-heatmap=t0k&x=1", "t0k"],
      ["#cs-heatmap=", null],
      ["#cs-heatmap=a<b", null],
      ["#cs-heatmap=a%20b", null],
      ["#xcs-heatmap=abc", null],
      ["", null],
    ]) {
      test(`heatmap overlay loader: ${JSON.stringify(hash)} → ${token ?? "none"}`, async () => {
        const page = load({ href: `https://shop.example/products/1${hash}` });
        const tags = page.document.head.childNodes;
        if (!token) {
          assert.equal(tags.length, 0);
          return;
        }
        assert.equal(tags.length, 1);
        const [tag] = tags;
        assert.equal(tag.tagName, "SCRIPT");
        assert.equal(tag.src, "https://cdn.example/static/sessions_app/heatmap.js");
        assert.deepEqual(plain(tag.attrs), { "data-token": token, "data-site": "cs_test", "data-api": "https://cdn.example" });
        // the analyst's visit is not recorded (nor the token in a page view URL)
        page.click(h("button", {}, "b"));
        page.api.track("x");
        page.hide();
        await page.tick(10000);
        assert.equal(page.requests.length, 0);
        assert.equal(page.listeners.document.length + page.listeners.window.length, 0);
      });
    }

    test("heatmap overlay loader: also under Do-Not-Track, once", async () => {
      const page = load({ href: "https://shop.example/#cs-heatmap=abc", navigator: { doNotTrack: "1" } });
      assert.equal(page.document.head.childNodes.length, 1);
      assert.equal(page.document.head.childNodes[0].getAttribute("data-token"), "abc");
      assert.equal(typeof page.api.track, "function");
    });
  });
}
