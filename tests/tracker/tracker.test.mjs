// The tracker as a page runs it, in a fake browser: both tracker.js and the built
// tracker.min.js must pass every test.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { h, loadPage, MIN_PATH, SOURCE_PATH } from "./harness.mjs";

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const ISO_US = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;
const plain = (x) => JSON.parse(JSON.stringify(x));
// What a page could leak into the wire: every field of every event sent, except the tracker's
// own ids and clock readings (random digits can spell any secret), which must keep their formats.
const leakable = (requests) =>
  JSON.stringify(
    requests.flatMap((r) =>
      r.body.events.map(({ id, ts, anonymous_id, ...rest }) => {
        assert.match(id, UUID_V4);
        assert.match(ts, ISO_US);
        assert.match(anonymous_id, UUID_V4);
        return rest;
      })
    )
  );

for (const [label, file] of [
  ["tracker.js", SOURCE_PATH],
  ["tracker.min.js", MIN_PATH],
]) {
  describe(label, () => {
    const load = (opts) => loadPage(file, opts);

    test("a page view on load, sent on flush in the documented wire format", async () => {
      const page = load();
      assert.equal(page.requests.length, 0);
      await page.api.flush();
      assert.equal(page.requests.length, 1);
      const [req] = page.requests;
      assert.equal(req.via, "fetch");
      assert.equal(req.url, "https://cdn.example/collect"); // script origin + /collect
      assert.deepEqual(plain(req.options.headers), { "Content-Type": "text/plain" });
      assert.equal(req.options.method, "POST");
      assert.equal(req.options.keepalive, true);
      assert.equal(req.options.credentials, "omit");
      assert.deepEqual(Object.keys(req.body).sort(), ["events", "sent_at", "site"]);
      assert.equal(req.body.site, "cs_test");
      assert.match(req.body.sent_at, ISO_MS);
      assert.equal(req.body.events.length, 1);
      const ev = req.body.events[0];
      assert.match(ev.id, UUID_V4);
      assert.match(ev.ts, ISO_US);
      assert.ok(ev.ts <= req.body.sent_at);
      assert.match(ev.anonymous_id, UUID_V4);
      assert.equal(ev.anonymous_id, page.storage.get("cs_aid"));
      assert.deepEqual(
        { ...ev, id: "-", ts: "-", anonymous_id: "-" },
        {
          id: "-",
          type: "pageview",
          ts: "-",
          anonymous_id: "-",
          url: "https://shop.example/products/1",
          referrer: "https://search.example/?q=shoes",
          title: "Product 1",
          viewport: 1280,
        }
      );
      await page.api.flush();
      assert.equal(page.requests.length, 1, "nothing queued: no empty request");
    });

    test("the anonymous id is generated once and kept across page loads", async () => {
      const storage = new Map();
      const first = load({ storage });
      await first.api.flush();
      const second = load({ storage });
      await second.api.flush();
      assert.equal(first.events()[0].anonymous_id, second.events()[0].anonymous_id);
      assert.notEqual(first.events()[0].id, second.events()[0].id);
    });

    test("without localStorage the anonymous id is a first-party cookie", async () => {
      const cookies = new Map();
      const first = load({ storage: "broken", cookies });
      await first.api.flush();
      const aid = first.events()[0].anonymous_id;
      assert.match(aid, UUID_V4);
      const c = cookies.get("cs_aid");
      assert.equal(c.value, aid);
      assert.equal(c.attributes["Max-Age"], "31536000");
      assert.equal(c.attributes.Path, "/");
      assert.equal(c.attributes.SameSite, "Lax");
      assert.ok("Secure" in c.attributes, "https page: Secure");
      const second = load({ storage: "broken", cookies });
      await second.api.flush();
      assert.equal(second.events()[0].anonymous_id, aid);
    });

    test("data-endpoint, data-flush-interval, data-batch-size", async () => {
      const page = load({
        attrs: { site: "cs_x", endpoint: "https://collect.example/in", "flush-interval": "1000", "batch-size": "3" },
      });
      await page.tick(999);
      assert.equal(page.requests.length, 0);
      await page.tick(1);
      assert.equal(page.requests.length, 1);
      assert.equal(page.requests[0].url, "https://collect.example/in");
      page.api.track("a");
      page.api.track("b");
      await page.settle();
      assert.equal(page.requests.length, 1);
      page.api.track("c"); // third queued event: batch full, sent at once
      await page.settle();
      assert.equal(page.requests.length, 2);
      assert.deepEqual(plain(page.requests[1].body.events.map((e) => e.name)), ["a", "b", "c"]);
    });

    test("default flush interval is 5 s", async () => {
      const page = load();
      await page.tick(4999);
      assert.equal(page.requests.length, 0);
      await page.tick(1);
      assert.equal(page.requests.length, 1);
    });

    test("single-page apps: pushState, replaceState, popstate, hashchange; no repeats", async () => {
      const page = load();
      const result = page.history.pushState({}, "", "/products/2");
      assert.equal(result, "push-result", "the original pushState runs and its result is returned");
      assert.equal(page.location.href, "https://shop.example/products/2");
      page.history.replaceState({}, "", "/products/2"); // same URL: no page view
      page.history.pushState({}, "", "/products/2"); // same URL again: none
      page.history.replaceState({}, "", "/products/2?tab=reviews");
      page.location.href = "https://shop.example/products/2?tab=reviews#top";
      page.fire("window", "hashchange");
      page.fire("window", "popstate"); // same URL as the hashchange: none
      page.location.href = "https://shop.example/products/1";
      page.fire("window", "popstate");
      page.api.page(); // manual, same URL: none
      await page.api.flush();
      assert.deepEqual(
        plain(page.events().filter((e) => e.type == "pageview").map((e) => [e.type, e.url])),
        [
          ["pageview", "https://shop.example/products/1"],
          ["pageview", "https://shop.example/products/2"],
          ["pageview", "https://shop.example/products/2?tab=reviews"],
          ["pageview", "https://shop.example/products/2?tab=reviews#top"],
          ["pageview", "https://shop.example/products/1"],
        ]
      );
      assert.deepEqual(plain(page.history.calls.length), 4);
    });

    test("events keep the order they were recorded in, also within one millisecond", async () => {
      const page = load();
      for (let i = 0; i < 40; i++) {
        const link = h("a", { href: `/p/${i}`, id: `l${i}` }, `Go ${i}`);
        h("html", {}, h("body", {}, link));
        page.click(link); // an SPA link: the click, then the page view it causes
        page.history.pushState({}, "", `/p/${i}`);
      }
      await page.api.flush();
      const events = page.events();
      assert.equal(events.length, 121); // a page view, then 40 × click, $pageleave, page view
      const label = (e) => `${e.name || e.type} ${e.type == "click" ? e.element.href : e.url}`;
      const order = events.map(label);
      assert.deepEqual(order.slice(0, 4), [
        "pageview https://shop.example/products/1",
        "click https://shop.example/p/0",
        "$pageleave https://shop.example/products/1",
        "pageview https://shop.example/p/0",
      ]);
      const byTime = events.slice().sort((a, b) => (a.ts < b.ts ? -1 : 1));
      assert.deepEqual(byTime.map(label), order);
      for (let i = 1; i < events.length; i++) assert.ok(events[i].ts > events[i - 1].ts, `ts ${i} increases`);
      // the point of the test: many of them share their millisecond
      const sameMs = events.filter((e, i) => i && e.ts.slice(0, 23) == events[i - 1].ts.slice(0, 23));
      assert.ok(sameMs.length > 10, `${sameMs.length} events shared a millisecond with the previous one`);
    });

    test("clicks on interactive elements are described", async () => {
      const page = load();
      const label = h("span", {}, "Buy ", h("b", {}, "now"));
      const button = h("button", { id: "buy", class: "btn primary" }, "\n  ", label, "  ");
      const link = h("a", { href: "/cart", class: "nav" }, h("span", {}, "Cart"));
      h("html", {}, h("body", {}, h("main", {}, h("div", { class: "card" }, button), h("nav", {}, link))));
      page.click(label.childNodes[0]); // a text node target
      page.click(link.childNodes[0]);
      page.click(h("input", { type: "submit", value: "Send", class: "go" }));
      await page.tick(1000); // nothing happened after them: queued as dead clicks
      await page.api.flush();
      const clicks = page.events().filter((e) => e.type === "click");
      assert.equal(clicks.length, 3);
      assert.deepEqual(plain(clicks[0].element), {
        tag: "button",
        id: "buy",
        classes: ["btn", "primary"],
        text: "Buy now",
        selector: "main > div.card > button#buy",
      });
      assert.equal(clicks[0].url, "https://shop.example/products/1");
      assert.equal(clicks[0].title, "Product 1");
      assert.equal(clicks[0].referrer, undefined, "referrer only on page views");
      assert.match(clicks[0].id, UUID_V4);
      assert.deepEqual(plain(clicks[1].element), {
        tag: "a",
        classes: ["nav"],
        text: "Cart",
        href: "https://shop.example/cart",
        selector: "main > nav > a.nav",
      });
      assert.deepEqual(plain(clicks[2].element), { tag: "input", classes: ["go"], text: "Send", selector: "input.go" });
    });

    test("secrets in URLs never leave the page: url, referrer and link hrefs are redacted", async () => {
      const page = load({
        href: "https://shop.example/account?session_id=s1&tab=orders#access_token=t",
        referrer: "https://idp.example/cb?code=c&state=ok",
        attrs: { site: "cs_test", redact: "email, -code" },
      });
      const link = h("a", { href: "/orders?id=7&email=a@b.example&token=x" }, "Order 7");
      h("html", {}, h("body", {}, link));
      page.click(link);
      await page.tick(1000);
      await page.api.flush();
      const body = leakable(page.requests);
      for (const secret of ["s1", "access_token", "a@b.example", "token="]) assert.ok(!body.includes(secret), secret);
      const [view, click] = page.events();
      assert.equal(view.url, "https://shop.example/account?tab=orders");
      // "-code" in data-redact keeps a parameter the defaults would drop
      assert.equal(view.referrer, "https://idp.example/cb?code=c&state=ok");
      assert.equal(click.element.href, "https://shop.example/orders?id=7");
      assert.equal(click.url, view.url);
    });

    test("never captured: typed values, password and hidden inputs, [data-cs-ignore]", async () => {
      // Ids that spell a secret (random ones can): the check must look at what could leak.
      let n = 0;
      const crypto = { randomUUID: () => `42424242-4242-4242-8242-${String(++n).padStart(12, "4")}` };
      const page = load({ crypto });
      const password = h("input", { type: "password", "data-cs-track": "" });
      password.value = "hunter2";
      const hidden = h("input", { type: "hidden", value: "csrf-token", "data-cs-track": "" });
      const inPasswordLabel = h("input", { type: "password" });
      inPasswordLabel.value = "hunter2";
      const pwLabel = h("label", {}, "Password ", inPasswordLabel);
      const secretButton = h("button", {}, "Reveal card 4242");
      const ignoredArea = h("div", { "data-cs-ignore": "" }, h("div", {}, secretButton));
      const text = h("input", { type: "text", "data-cs-track": "", value: "x" });
      text.value = "my address";
      const inIgnored = h("p", {}, "Card 4242 ", h("b", {}, "exp 12/29"));
      const ignoredText = h("section", { "data-cs-ignore": "" }, inIgnored);
      const editor = h("div", { contenteditable: "true" }, "my draft");
      h("body", {}, password, hidden, pwLabel, ignoredArea, text, ignoredText, editor);
      page.click(password);
      page.click(hidden);
      page.click(inPasswordLabel);
      page.click(secretButton.childNodes[0]);
      page.click(inIgnored.childNodes[1]); // not interactive, inside [data-cs-ignore]
      page.click(text);
      page.click(editor.childNodes[0]); // recorded (every click is), without its text
      await page.tick(1000);
      await page.api.flush();
      const clicks = page.events().filter((e) => e.type === "click");
      assert.equal(clicks.length, 2, JSON.stringify(clicks));
      assert.deepEqual(plain(clicks[0].element), { tag: "input", selector: "input" });
      assert.deepEqual(plain(clicks[1].element), { tag: "div", selector: "div" });
      const wire = leakable(page.requests);
      for (const secret of ["hunter2", "csrf-token", "4242", "12/29", "my address", "my draft"])
        assert.ok(!wire.includes(secret), secret);
    });

    test("a label click and the synthetic click on its control count once", async () => {
      const page = load();
      const box = h("input", { type: "checkbox" });
      const label = h("label", { class: "remember" }, box, " Remember me");
      h("body", {}, label);
      page.click(label.childNodes[1], 5000);
      page.click(box, 5001);
      page.click(label.childNodes[1], 7000); // a real second click
      await page.tick(1000);
      await page.api.flush();
      const clicks = page.events().filter((e) => e.type === "click");
      assert.equal(clicks.length, 2);
      assert.equal(clicks[0].element.text, "Remember me");
    });

    test("track: custom events with a snapshot of props", async () => {
      const page = load();
      const props = { plan: "pro", items: [1, 2] };
      page.api.track("signup", props);
      props.plan = "changed later";
      const cyclic = { a: 1 };
      cyclic.self = cyclic;
      page.api.track("cyclic", cyclic);
      page.api.track("no-props");
      page.api.track("array-props", [1, 2]);
      page.api.track(""); // no name: ignored
      page.api.track();
      await page.api.flush();
      const custom = page.events().filter((e) => e.type === "custom");
      assert.deepEqual(plain(custom.map((e) => [e.name, e.props ?? null])), [
        ["signup", { plan: "pro", items: [1, 2] }],
        ["cyclic", null],
        ["no-props", null],
        ["array-props", null],
      ]);
      for (const e of custom) {
        assert.equal(e.url, "https://shop.example/products/1");
        assert.equal(e.referrer, undefined);
        assert.equal(e.element, undefined);
      }
    });

    test("identify: $identify once, user_id on later events and later page loads", async () => {
      const storage = new Map();
      const page = load({ storage });
      page.api.track("before");
      page.api.identify("user-42");
      page.api.identify("user-42"); // unchanged: nothing new
      page.api.track("after");
      await page.api.flush();
      const events = page.events();
      assert.deepEqual(plain(events.map((e) => [e.type, e.name ?? null, e.user_id ?? null])), [
        ["pageview", null, null],
        ["custom", "before", null],
        ["custom", "$identify", "user-42"],
        ["custom", "after", "user-42"],
      ]);
      assert.equal(events[2].props, undefined, "$identify has no props");
      assert.equal(storage.get("cs_uid"), "user-42");

      const next = load({ storage });
      await next.api.flush();
      assert.equal(next.events()[0].user_id, "user-42");
      next.api.identify(null); // log out
      next.api.track("anon");
      await next.api.flush();
      assert.equal(next.events()[1].user_id, undefined);
      assert.equal(storage.has("cs_uid"), false);
    });

    test("calls queued before load are replayed: identity first, then the page view", async () => {
      const page = load({
        before: (w) => {
          w.clickstream = [["track", "early", { a: 1 }], ["identify", "u9"]];
        },
      });
      assert.equal(typeof page.api.track, "function");
      await page.api.flush();
      assert.deepEqual(plain(page.events().map((e) => [e.type, e.name ?? "", e.user_id])), [
        ["custom", "$identify", "u9"],
        ["pageview", "", "u9"],
        ["custom", "early", "u9"],
      ]);
      assert.deepEqual(plain(page.events()[2].props), { a: 1 });
    });

    test("data-auto=false: no automatic page views or clicks; page() and track() work", async () => {
      const page = load({ attrs: { site: "cs_test", auto: "false" } });
      page.history.pushState({}, "", "/elsewhere");
      page.click(h("button", {}, "x"));
      assert.equal(page.listeners.document.filter((l) => l.type === "click").length, 0);
      page.api.page();
      page.api.track("manual");
      await page.api.flush();
      assert.deepEqual(plain(page.events().map((e) => [e.type, e.url])), [
        ["pageview", "https://shop.example/elsewhere"],
        ["custom", "https://shop.example/elsewhere"],
      ]);
    });

    test("page hide: sendBeacon with a text/plain Blob", async () => {
      const page = load();
      page.api.track("bye");
      page.document.visibilityState = "hidden";
      page.fire("document", "visibilitychange");
      await page.settle();
      assert.equal(page.requests.length, 1);
      const [req] = page.requests;
      assert.equal(req.via, "beacon");
      assert.equal(req.type, "text/plain");
      assert.equal(req.url, "https://cdn.example/collect");
      assert.deepEqual(plain(req.body.events.map((e) => e.name || e.type)), ["pageview", "bye", "$pageleave"]);
      page.api.track("again");
      page.fire("window", "pagehide");
      await page.settle();
      assert.equal(page.requests.length, 2);
      assert.equal(page.requests[1].via, "beacon");
      page.document.visibilityState = "visible";
      page.api.track("visible");
      page.fire("document", "visibilitychange"); // becoming visible sends nothing
      await page.settle();
      assert.equal(page.requests.length, 2);
    });

    test("page hide: fetch keepalive when sendBeacon refuses or is missing", async () => {
      for (const opts of [{ beacon: () => false }, { beacon: null }]) {
        const page = load(opts);
        page.fire("window", "pagehide");
        await page.settle();
        const fetches = page.requests.filter((r) => r.via === "fetch");
        assert.equal(fetches.length, 1);
        assert.equal(fetches[0].options.keepalive, true);
        assert.equal(fetches[0].options.credentials, "omit");
        assert.equal(fetches[0].body.events[0].type, "pageview");
      }
    });

    test("requests carry at most 50 events", async () => {
      const page = load({ attrs: { site: "cs_test", "batch-size": "500" } });
      for (let i = 0; i < 119; i++) page.api.track(`e${i}`);
      await page.api.flush();
      assert.deepEqual(plain(page.requests.map((r) => r.body.events.length)), [50, 50, 20]);
      const names = page.events().map((e) => e.name ?? e.type);
      assert.equal(names[0], "pageview");
      assert.equal(names[119], "e118");
    });

    test("bodies over 60 kB are sent without keepalive (browsers refuse them)", async () => {
      const page = load({ attrs: { site: "cs_test", "batch-size": "500" } });
      for (let i = 0; i < 30; i++) page.api.track(`big${i}`, { blob: "x".repeat(3000) });
      await page.api.flush();
      assert.deepEqual(plain(page.requests.map((r) => r.options.keepalive)), [false]);
      page.api.track("small");
      await page.api.flush();
      assert.equal(page.requests[1].options.keepalive, true);
    });

    for (const status of [400, 401, 403, 413]) {
      test(`status ${status}: dropped, not retried`, async () => {
        const page = load({ respond: () => status });
        await page.api.flush();
        assert.equal(page.requests.length, 1);
        assert.equal(page.storage.has("cs_retry"), false);
        await page.tick(120000);
        assert.equal(page.requests.filter((r) => r.body.events.some((e) => e.type === "pageview")).length, 1);
      });
    }

    for (const failure of [500, 503, 429, "network-error"]) {
      test(`${failure}: kept in localStorage and retried with backoff`, async () => {
        let fail = 3;
        const page = load({
          attrs: { site: "cs_test", "flush-interval": "3600000" },
          respond: () => (fail-- > 0 ? failure : 202),
        });
        await page.api.flush();
        assert.equal(page.requests.length, 1);
        const stored = page.retryStore();
        assert.equal(stored.length, 1);
        assert.equal(stored[0].id, page.requests[0].body.events[0].id);
        // backoff with jitter: 0.5-1 s, then 1-2 s, then 2-4 s
        await page.tick(499);
        assert.equal(page.requests.length, 1);
        await page.tick(501);
        assert.equal(page.requests.length, 2);
        await page.tick(2000);
        assert.equal(page.requests.length, 3);
        await page.tick(4000);
        assert.equal(page.requests.length, 4);
        assert.equal(page.storage.has("cs_retry"), false, "delivered: store emptied");
        const ids = page.requests.map((r) => r.body.events[0].id);
        assert.equal(new Set(ids).size, 1, "the same event id on every retry");
        const sentAt = page.requests.map((r) => r.body.sent_at);
        assert.ok(sentAt.every((s) => s >= page.requests[0].body.events[0].ts));
        await page.tick(120000);
        assert.equal(page.requests.length, 4, "no retry after success");
      });
    }

    test("events stay stored while their retry is in flight: a page closed then loses none", async () => {
      const storage = new Map();
      let answer = null;
      let calls = 0;
      const down = load({
        storage,
        attrs: { site: "cs_test", "flush-interval": "3600000" },
        respond: () => (++calls > 1 ? new Promise((res) => (answer = res)) : 503),
      });
      await down.api.flush();
      assert.equal(down.retryStore().length, 1);
      await down.tick(1000); // the retry goes out and hangs
      assert.equal(down.requests.length, 2);
      assert.equal(answer !== null, true);
      assert.deepEqual(plain(down.retryStore().map((e) => e.id)), [down.requests[0].body.events[0].id]);

      // The page is closed before the answer: the next page load sends the event again.
      const next = load({ storage, attrs: { site: "cs_test", "flush-interval": "3600000" } });
      await next.tick(1000);
      assert.equal(next.events()[0].id, down.requests[0].body.events[0].id);
      assert.equal(storage.has("cs_retry"), false);
    });

    test("a retry removes only what it delivered; one retry in flight at a time", async () => {
      let mode = 503;
      let answer = null;
      const page = load({
        attrs: { site: "cs_test", "flush-interval": "3600000" },
        respond: () => (mode === "hold" ? new Promise((res) => (answer = res)) : mode),
      });
      await page.api.flush(); // the page view fails: stored
      mode = "hold";
      await page.tick(1000); // its retry hangs
      assert.equal(page.requests.length, 2);
      mode = 503;
      page.api.track("meanwhile");
      await page.api.flush(); // fails: stored beside the one in flight
      assert.deepEqual(plain(page.retryStore().map((e) => e.name ?? e.type)), ["pageview", "meanwhile"]);
      await page.tick(5000); // a second retry would resend the page view now
      assert.equal(page.requests.filter((r) => r.body.events.some((e) => e.type === "pageview")).length, 2);
      mode = 202;
      answer(202);
      await page.tick(0);
      assert.deepEqual(plain(page.retryStore().map((e) => e.name ?? e.type)), ["meanwhile"]);
      await page.tick(60000);
      assert.equal(page.storage.has("cs_retry"), false, "the rest is retried and delivered");
    });

    test("the retry store keeps at most 100 events, the newest", async () => {
      const page = load({ attrs: { site: "cs_test", "batch-size": "1000" }, respond: () => 503 });
      for (let i = 0; i < 149; i++) page.api.track(`e${i}`);
      await page.api.flush();
      const stored = page.retryStore();
      assert.equal(stored.length, 100);
      assert.equal(stored[0].name, "e49");
      assert.equal(stored[99].name, "e148");
    });

    test("events a previous page could not send are retried on the next load", async () => {
      const storage = new Map();
      const down = load({ storage, respond: () => 500 });
      for (let i = 0; i < 70; i++) down.api.track(`e${i}`);
      await down.api.flush();
      assert.equal(JSON.parse(storage.get("cs_retry")).length, 71);

      const up = load({ storage, attrs: { site: "cs_test", "flush-interval": "3600000" } });
      assert.equal(up.requests.length, 0);
      await up.tick(1000);
      assert.deepEqual(plain(up.requests.map((r) => r.body.events.length)), [50, 21]);
      assert.equal(storage.has("cs_retry"), false);
      const names = up.events().map((e) => e.name ?? e.type);
      assert.deepEqual(names.slice(0, 2), ["pageview", "e0"]);
      assert.equal(up.events()[0].url, "https://shop.example/products/1");
      await up.api.flush(); // the new page's own page view
      assert.equal(up.requests.length, 3);
    });

    for (const [what, opts] of [
      ["navigator.doNotTrack", { navigator: { doNotTrack: "1" } }],
      ["window.doNotTrack", { window: { doNotTrack: "1" } }],
      ["Global Privacy Control", { navigator: { globalPrivacyControl: true } }],
    ]) {
      test(`${what}: nothing captured, stored or sent`, async () => {
        const storage = new Map([["cs_retry", JSON.stringify([{ id: "x", ts: "2026-01-01T00:00:00.000Z" }])]]);
        const page = load({ ...opts, storage });
        const api = page.api;
        for (const m of ["track", "identify", "page", "optOut", "optIn", "flush"]) assert.equal(typeof api[m], "function");
        api.track("x", { a: 1 });
        api.identify("u1");
        api.page();
        page.history.pushState({}, "", "/2");
        page.click(h("button", {}, "b"));
        await api.flush();
        page.fire("window", "pagehide");
        await page.tick(600000);
        assert.equal(page.requests.length, 0);
        assert.deepEqual([...storage.keys()], ["cs_retry"]);
        assert.equal(page.cookies.size, 0);
        assert.equal(page.listeners.document.length + page.listeners.window.length, 0);
        assert.equal(page.history.pushState, page.originalHistory.pushState);
      });
    }

    test("optOut: clears the queue and ids, sends nothing; optIn resumes", async () => {
      const storage = new Map();
      const page = load({ storage, respond: () => 500 });
      page.api.identify("u1");
      await page.api.flush(); // fails: into the retry store
      assert.ok(storage.has("cs_retry"));
      const oldAid = storage.get("cs_aid");
      page.api.track("queued");
      page.api.optOut();
      assert.equal(storage.get("cs_optout"), "1");
      for (const k of ["cs_retry", "cs_aid", "cs_uid"]) assert.equal(storage.has(k), false, k);
      const before = page.requests.length;
      page.api.track("after");
      page.api.identify("u2");
      page.click(h("button", {}, "b"));
      await page.api.flush();
      page.fire("window", "pagehide");
      await page.tick(600000);
      assert.equal(page.requests.length, before);

      // the choice holds on later page loads
      const later = load({ storage });
      later.api.track("x");
      await later.api.flush();
      await later.tick(600000);
      assert.equal(later.requests.length, 0);
      assert.equal(storage.has("cs_aid"), false);

      later.api.optIn();
      assert.equal(storage.has("cs_optout"), false);
      later.api.track("back");
      await later.api.flush();
      const [ev] = later.events();
      assert.equal(ev.name, "back");
      assert.notEqual(ev.anonymous_id, oldAid, "a new anonymous id after opting out");
      assert.equal(ev.user_id, undefined);
    });

    test("optOut then optIn on the same page: what was queued before is never sent", async () => {
      const page = load();
      page.api.track("queued");
      page.api.optOut();
      page.api.optIn();
      page.api.track("after");
      await page.api.flush();
      assert.deepEqual(plain(page.events().map((e) => e.name)), ["after"]);
    });

    test("finds its tag without document.currentScript", async () => {
      const script = h("script", { src: "https://a.example/js/tracker.min.js?v=2", "data-site": "cs_found" });
      script.src = "https://a.example/js/tracker.min.js?v=2";
      const page = load({ noCurrentScript: true, scripts: [script, h("script", { src: "https://x.example/app.js" })] });
      await page.api.flush();
      assert.equal(page.requests[0].body.site, "cs_found");
      assert.equal(page.requests[0].url, "https://a.example/collect");
    });

    test("no data-site: the tracker stays off", () => {
      const page = load({ attrs: {} });
      assert.equal(page.api, undefined);
      assert.equal(page.listeners.document.length + page.listeners.window.length, 0);
    });

    test("loaded twice: the first instance stays", async () => {
      let first;
      const page = load({
        before: (w) => {
          first = { track() {}, flush() {} };
          w.clickstream = first;
        },
      });
      assert.equal(page.api, first);
      assert.equal(page.listeners.document.length, 0);
    });

    test("long values are cut to the collector's limits", async () => {
      const page = load({ title: "T".repeat(600), href: "https://shop.example/?" + "q".repeat(3000) });
      page.api.track("n".repeat(200), {});
      page.api.identify("u".repeat(300));
      await page.api.flush();
      const [pv, custom, identify] = page.events();
      assert.equal(pv.title.length, 512);
      assert.equal(pv.url.length, 2048);
      assert.equal(custom.name.length, 128);
      assert.equal(identify.user_id.length, 256);
    });
  });
}
