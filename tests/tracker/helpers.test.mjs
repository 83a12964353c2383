// The pure helpers of static/sessions_app/tracker.js, on a fake DOM.
import { test } from "node:test";
import assert from "node:assert/strict";
import { webcrypto } from "node:crypto";
import { h, helpers } from "./harness.mjs";

const T = helpers();
// Values made inside the vm context have that context's prototypes: compare as JSON.
const plain = (x) => JSON.parse(JSON.stringify(x));
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test("dnt: Do-Not-Track and Global Privacy Control", () => {
  assert.equal(T.dnt({}, {}), false);
  assert.equal(T.dnt({ doNotTrack: "1" }, {}), true);
  assert.equal(T.dnt({}, { doNotTrack: "1" }), true);
  assert.equal(T.dnt({ globalPrivacyControl: true }, {}), true);
  assert.equal(T.dnt({ doNotTrack: "0", globalPrivacyControl: false }, { doNotTrack: "unspecified" }), false);
  assert.equal(T.dnt({ doNotTrack: null }, { doNotTrack: undefined }), false);
});

test("clip: collapses whitespace and control characters, trims, cuts", () => {
  assert.equal(T.clip("  Buy \n\t now  ", 128), "Buy now");
  assert.equal(T.clip("a\u0000\u0007b", 10), "a b");
  assert.equal(T.clip("x".repeat(300), 128).length, 128);
  assert.equal(T.clip(null, 10), "");
  assert.equal(T.clip(undefined, 10), "");
  assert.equal(T.clip(42, 10), "42");
  // never half of a surrogate pair at the cut
  const cut = T.clip("a" + "😀".repeat(10), 4); // a + 1.5 emoji
  assert.equal(cut, "a😀");
  assert.doesNotThrow(() => encodeURIComponent(cut));
});

test("selectorOf: short path, the documented example", () => {
  const button = h("button", { id: "buy", class: "btn primary" }, "Buy now");
  h("html", {}, h("body", {}, h("main", {}, h("div", { class: "card wide" }, button))));
  assert.equal(T.selectorOf(button), "main > div.card > button#buy");
});

test("selectorOf: stops at an ancestor with an id, at 5 levels, below body", () => {
  const leaf = h("span", {});
  h("div", { id: "app" }, h("section", { class: "a" }, h("ul", {}, h("li", { class: "item x" }, leaf))));
  assert.equal(T.selectorOf(leaf), "div#app > section.a > ul > li.item > span");
  const near = h("b", {});
  h("main", {}, h("section", {}, h("div", { id: "cart", class: "box" }, h("p", {}, near))));
  assert.equal(T.selectorOf(near), "div#cart > p > b");

  let deep = h("a", { class: "link" });
  const top = deep;
  for (let i = 0; i < 8; i++) deep = h("div", {}, deep);
  h("html", {}, h("body", {}, deep));
  assert.equal(T.selectorOf(top), "div > div > div > div > a.link");

  const b = h("button", {});
  h("html", {}, h("body", {}, b));
  assert.equal(T.selectorOf(b), "button");
});

test("selectorOf: escapes characters that are special in CSS", () => {
  const el = h("div", { class: "md:flex w-1/2" });
  h("body", {}, el);
  assert.equal(T.selectorOf(el), "div.md\\:flex");
  const withId = h("p", { id: "a.b" });
  assert.equal(T.selectorOf(withId), "p#a\\.b");
});

test("clickable: the nearest interactive element within 10 ancestors", () => {
  const icon = h("svg", {});
  const button = h("button", {}, h("span", {}, icon));
  assert.equal(T.clickable(icon), button);

  for (const [tag, attrs] of [
    ["a", { href: "/x" }],
    ["button", {}],
    ["input", { type: "button" }],
    ["input", { type: "submit" }],
    ["input", { type: "SUBMIT" }],
    ["div", { role: "button" }],
    ["summary", {}],
    ["select", {}],
    ["label", {}],
    ["div", { "data-cs-track": "" }],
  ]) {
    const el = h(tag, attrs);
    assert.equal(T.clickable(el), el, `${tag} ${JSON.stringify(attrs)}`);
  }
  for (const el of [h("div", {}), h("input", { type: "text" }), h("input", {}), h("p", { role: "note" })]) {
    assert.equal(T.clickable(el), null);
  }

  // bounded: 10 ancestors are searched, the 11th is not
  let leaf = h("i", {});
  let node = leaf;
  for (let i = 0; i < 10; i++) node = h("div", {}, node);
  const link = h("a", { href: "/" }, node); // 11th ancestor of leaf
  assert.equal(T.clickable(leaf), null);
  leaf = node.childNodes[0]; // one level closer: link is its 10th ancestor
  assert.equal(T.clickable(leaf), link);
});

test("ignored: password and hidden inputs, anything inside [data-cs-ignore]", () => {
  assert.equal(T.ignored(h("input", { type: "password" })), true);
  assert.equal(T.ignored(h("input", { type: "PassWord" })), true);
  assert.equal(T.ignored(h("input", { type: "hidden" })), true);
  const inner = h("button", {}, "x");
  h("div", { "data-cs-ignore": "" }, h("div", {}, inner));
  assert.equal(T.ignored(inner), true);
  assert.equal(T.ignored(h("button", {})), false);
  assert.equal(T.ignored(h("input", { type: "submit" })), false);
  assert.equal(T.ignored(null), true);
});

test("textOf: never the value of an input other than button/submit", () => {
  const text = h("input", { type: "text", value: "default", "data-cs-track": "" });
  text.value = "typed secret";
  assert.equal(T.textOf(text), "");
  const email = h("input", { type: "email" });
  email.value = "me@example.com";
  assert.equal(T.textOf(email), "");
  assert.equal(T.textOf(h("input", { type: "submit", value: "Send" })), "Send");
  assert.equal(T.textOf(h("input", { type: "button", value: "Go" })), "Go");
  assert.equal(T.textOf(h("select", {}, h("option", {}, "Secret choice"))), "");
  assert.equal(T.textOf(h("textarea", {}, "draft")), "");
  assert.equal(T.textOf(h("div", { contenteditable: "true", "data-cs-track": "" }, "typed")), "");
  assert.equal(T.textOf(h("div", { "data-cs-track": "" }, "Note ", h("div", { contenteditable: "" }, "typed"))), "");
  assert.equal(T.textOf(h("button", {}, "Pay ", h("span", { "data-cs-ignore": "" }, "4242"))), "");
  assert.equal(T.textOf(h("button", {}, "Pay ", h("b", {}, "now"))), "Pay now");
});

test("describe: tag, id, classes, text, absolute href, selector", () => {
  const button = h("button", { id: "buy", class: "btn  primary" }, "\n  Buy   now \n");
  h("main", {}, h("div", { class: "card" }, button));
  assert.deepEqual(plain(T.describe(button)), {
    tag: "button",
    id: "buy",
    classes: ["btn", "primary"],
    text: "Buy now",
    selector: "main > div.card > button#buy",
  });

  const link = h("a", { href: "../cart?x=1" }, "Cart");
  assert.deepEqual(plain(T.describe(link, [])), {
    tag: "a",
    text: "Cart",
    href: "https://shop.example/cart?x=1",
    selector: "a",
  });

  const many = h("a", { class: Array.from({ length: 15 }, (_, i) => `c${i}`).join(" ") + " " + "z".repeat(100) });
  const d = T.describe(many);
  assert.equal(d.classes.length, 10);
  assert.equal(d.href, undefined); // no href attribute
  const long = h("a", { class: "z".repeat(100) }, "y".repeat(500));
  const dl = T.describe(long);
  assert.equal(dl.classes[0].length, 64);
  assert.equal(dl.text.length, 128);

  const icon = h("button", { "aria-label": "Close dialog" }, h("svg", {}));
  assert.equal(T.describe(icon).text, "Close dialog");

  const input = h("input", { type: "text", "data-cs-track": "", name: "q" });
  input.value = "private search";
  assert.ok(!JSON.stringify(T.describe(input)).includes("private"));
});

test("bound: keeps the newest events by ts, drops the oldest", () => {
  const events = Array.from({ length: 130 }, (_, i) => ({
    id: String(i),
    ts: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, 0) + i * 1000).toISOString(),
  }));
  const shuffled = events.slice(70).concat(events.slice(0, 70)); // retried ones come first
  const kept = T.bound(shuffled, 100);
  assert.equal(kept.length, 100);
  assert.deepEqual(plain(kept.map((e) => e.id)), events.slice(30).map((e) => e.id));
  assert.equal(T.bound(events.slice(0, 5), 100).length, 5);
  assert.equal(shuffled.length, 130); // input untouched
});

test("backoff: 1 s, 2 s, 4 s ... capped at 60 s, with jitter", () => {
  assert.equal(T.backoff(0, 1), 1000);
  assert.equal(T.backoff(0, 0), 500);
  assert.equal(T.backoff(1, 1), 2000);
  assert.equal(T.backoff(2, 1), 4000);
  assert.equal(T.backoff(6, 1), 60000);
  assert.equal(T.backoff(50, 1), 60000);
  assert.equal(T.backoff(2000, 0.5), 45000);
  for (let n = 0; n < 12; n++) {
    const d = T.backoff(n, Math.random());
    assert.ok(d >= 500 && d <= 60000, `${n}: ${d}`);
  }
});

test("chunks: at most n a chunk, in order", () => {
  const list = Array.from({ length: 120 }, (_, i) => i);
  const parts = T.chunks(list, 50);
  assert.deepEqual(plain(parts.map((p) => p.length)), [50, 50, 20]);
  assert.deepEqual(plain(parts.flat()), list);
  assert.deepEqual(plain(T.chunks([], 50)), []);
});

test("retryable: network errors, 408, 429 and 5xx; never 2xx or 4xx", () => {
  for (const s of [0, undefined, 408, 429, 500, 502, 503, 504]) assert.equal(T.retryable(s), true, String(s));
  for (const s of [200, 202, 204, 400, 401, 403, 404, 413, 422]) assert.equal(T.retryable(s), false, String(s));
});

test("uuid: crypto.randomUUID, else a v4 from getRandomValues", () => {
  assert.equal(T.uuid({ randomUUID: () => "from-random-uuid" }), "from-random-uuid");
  let filled = 0;
  const id = T.uuid({
    getRandomValues(bytes) {
      filled++;
      bytes.fill(0xff);
      return bytes;
    },
  });
  assert.equal(filled, 1);
  assert.equal(id, "ffffffff-ffff-4fff-bfff-ffffffffffff");
  const zeros = T.uuid({ getRandomValues: (b) => b });
  assert.equal(zeros, "00000000-0000-4000-8000-000000000000");
  const insecure = { getRandomValues: (b) => webcrypto.getRandomValues(b) }; // http: no randomUUID
  assert.match(T.uuid(insecure), UUID_V4);
  const ids = new Set(Array.from({ length: 200 }, () => T.uuid(insecure)));
  assert.equal(ids.size, 200);
});

test("redact: query and fragment parameters named like secrets are dropped", () => {
  const r = (u, names = []) => T.redact(u, names);
  // nothing to drop: the URL comes back byte for byte (encoding untouched)
  for (const u of [
    "https://a.example/p",
    "https://a.example/p?q=red%20shoes&page=2#reviews",
    "https://a.example/#/cart",
    "https://a.example/?author=me&keyword=x&design=1&utm_source=news",
  ])
    assert.equal(r(u), u);
  assert.equal(r("https://a.example/reset?token=abc"), "https://a.example/reset");
  assert.equal(r("https://a.example/p?a=1&api_key=k&b=2"), "https://a.example/p?a=1&b=2");
  assert.equal(r("https://a.example/p?Password=x&b=2#top"), "https://a.example/p?b=2#top");
  assert.equal(r("https://a.example/p?b=2&SESSIONID=s"), "https://a.example/p?b=2");
  assert.equal(r("https://a.example/cb?code=c&state=s&sig=x"), "https://a.example/cb?state=s");
  for (const name of ["access_token", "apikey", "secret", "passwd", "pwd", "auth", "session_id", "PHPSESSID", "jwt", "otp", "signature"])
    assert.equal(r(`https://a.example/p?x=1&${name}=v`), "https://a.example/p?x=1", name);
  // OAuth implicit flow: the secrets ride in the fragment
  assert.equal(r("https://a.example/cb#access_token=t&token_type=bearer&state=s"), "https://a.example/cb#token_type=bearer&state=s");
  assert.equal(r("https://a.example/#/reset?token=t"), "https://a.example/#/reset");
  // per site (data-redact): more names, and "-name" keeps one the defaults would drop
  assert.equal(r("https://a.example/p?ref=x&code=SUMMER&email=a@b", ["email", "-code"]), "https://a.example/p?ref=x&code=SUMMER");
  assert.equal(r("not a url ?token=1"), "not a url ");
  assert.equal(r(""), "");
});

test("stamp: the clock's microsecond, counting up within one millisecond", () => {
  const ms = 1764000000123;
  assert.equal(T.stamp(ms, 0), ms * 1000);
  assert.equal(T.stamp(ms, ms * 1000), ms * 1000 + 1, "second event in the same ms");
  assert.equal(T.stamp(ms, ms * 1000 + 7), ms * 1000 + 8);
  assert.equal(T.stamp(ms + 1, ms * 1000 + 8), (ms + 1) * 1000, "a new ms starts at its own us");
  // past 1,000 events in one ms the counter runs into the next ms, still increasing
  assert.equal(T.stamp(ms + 1, (ms + 1) * 1000 + 2), (ms + 1) * 1000 + 3);
  // a clock set back by more than a ms is followed (no drift into the future)
  assert.equal(T.stamp(ms - 5000, ms * 1000 + 3), (ms - 5000) * 1000);
  let last = 0;
  const seen = [];
  for (let i = 0; i < 2500; i++) seen.push((last = T.stamp(ms + Math.floor(i / 700), last)));
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i] > seen[i - 1], `strictly increasing at ${i}`);
});

test("iso: six decimals that sort and parse as the same instant", () => {
  assert.equal(T.iso(1764000000123004), "2025-11-24T16:00:00.123004Z");
  assert.equal(T.iso(1764000000123000), "2025-11-24T16:00:00.123000Z");
  assert.equal(T.iso(1764000000999999), "2025-11-24T16:00:00.999999Z");
  const a = T.iso(1764000000123009), b = T.iso(1764000000123010);
  assert.ok(a < b, "string order is time order");
  assert.equal(Date.parse(a), 1764000000123);
});

test("position: x a fraction of the document width, y in px, ex/ey within the element", () => {
  const rect = { left: 100, top: 50, width: 200, height: 40 };
  const ev = { pageX: 300, pageY: 1250.6, clientX: 150, clientY: 60 };
  assert.deepEqual(plain(T.position(ev, rect, 1280)), { x: 0.2344, y: 1251, ex: 0.25, ey: 0.25 });
  // 4 and 3 decimals
  assert.deepEqual(plain(T.position({ pageX: 1, pageY: 0, clientX: 101, clientY: 51 }, { ...rect, width: 3, height: 7 }, 3)),
    { x: 0.3333, y: 0, ex: 0.333, ey: 0.143 });
  // clamped to [0, 1]: a click outside the box (a border, a transform), past the width
  assert.deepEqual(plain(T.position({ pageX: 2000, pageY: -5, clientX: 99, clientY: 500 }, rect, 1280)),
    { x: 1, y: 0, ex: 0, ey: 1 });
  // a side of 0 px: that fraction is left out
  assert.deepEqual(plain(T.position(ev, { left: 0, top: 0, width: 0, height: 0 }, 1280)), { x: 0.2344, y: 1251 });
  assert.deepEqual(plain(T.position(ev, { left: 100, top: 0, width: 200, height: 0 }, 1280)), { x: 0.2344, y: 1251, ex: 0.25 });
  // no width at all: never NaN or Infinity
  assert.deepEqual(plain(T.position({ pageX: 0, pageY: 0, clientX: 0, clientY: 0 }, rect, 0)), { x: 0, y: 0, ex: 0, ey: 0 });
});

test("rage: the 3rd and later clicks of a burst (1 s, 30 px from its first click)", () => {
  const run = (clicks) => {
    let list = [];
    return clicks.map(([x, y, t]) => {
      const [rage, next] = T.rage(list, { x, y, t });
      list = next;
      return rage;
    });
  };
  assert.deepEqual(plain(run([[10, 10, 0], [12, 11, 200], [9, 10, 400]])), [false, false, true]);
  assert.deepEqual(plain(run([[10, 10, 0], [12, 11, 200]])), [false, false], "two are not rage");
  assert.deepEqual(plain(run([[10, 10, 0], [12, 11, 200], [9, 10, 400], [30, 28, 1000]])), [false, false, true, true], "a 4th too");
  // 40 px from the first: a new burst, which the next two clicks near it make rage
  assert.deepEqual(plain(run([[10, 10, 0], [12, 11, 200], [50, 10, 300], [50, 12, 350], [52, 10, 400]])),
    [false, false, false, false, true]);
  // 1.1 s after the first: a new burst
  assert.deepEqual(plain(run([[10, 10, 0], [12, 11, 200], [10, 10, 1100], [10, 10, 1200], [10, 10, 1300]])),
    [false, false, false, false, true]);
  // within 30 px of the first click counts, not of the previous one (Euclidean)
  assert.deepEqual(plain(run([[0, 0, 0], [18, 24, 10], [-18, -24, 20]])), [false, false, true]); // 30 px each
  assert.deepEqual(plain(run([[0, 0, 0], [25, 0, 10], [31, 0, 20]])), [false, false, false]);
  const [, list] = T.rage([{ x: 0, y: 0, t: 0 }], { x: 0, y: 0, t: 5 });
  assert.equal(list.length, 2);
});

test("depth: scroll depth in percent", () => {
  assert.equal(T.depth(0, 800, 500), 100, "a page shorter than the viewport");
  assert.equal(T.depth(0, 800, 800), 100);
  assert.equal(T.depth(3200, 800, 4000), 100, "at the bottom");
  assert.equal(T.depth(3199.5, 800, 4000), 100, "fractional scroll at the bottom");
  assert.equal(T.depth(0, 800, 4000), 20, "the top of a long page: fold / height");
  assert.equal(T.depth(0, 700, 3000), 23);
  assert.equal(T.depth(1000, 800, 4000), 45);
  assert.equal(T.depth(-40, 800, 4000), 20, "overscroll above the top");
  assert.equal(T.depth(9000, 800, 4000), 100, "overscroll below the bottom");
  assert.equal(T.depth(0, 800, 0), 100);
});
