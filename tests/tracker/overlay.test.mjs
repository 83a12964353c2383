// The heatmap overlay (static/sessions_app/heatmap.js) in a node:vm context: its pure
// helpers, then the overlay in a small fake page (DOM, canvas 2D, fetch, timers, history)
// made here. No third-party code.
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import vm from "node:vm";

const PATH = join(dirname(fileURLToPath(import.meta.url)), "../../static/sessions_app/heatmap.js");
const SOURCE = readFileSync(PATH, "utf8");
const plain = (x) => JSON.parse(JSON.stringify(x)); // values from the vm's realm

// ---- the pure helpers ----

function helpers() {
  const context = vm.createContext({});
  vm.runInContext(SOURCE, context, { filename: "heatmap.js" });
  return context.__csHeatmap;
}

describe("heatmap.js helpers", () => {
  const hm = helpers();

  test("layoutOf: the API's viewport classes", () => {
    for (const [width, cls] of [[0, "<640"], [320, "<640"], [639, "<640"], [640, "640-1024"], [1024, "640-1024"], [1025, ">1024"], [2560, ">1024"]]) {
      assert.equal(hm.layoutOf(width), cls, `width ${width}`);
    }
  });

  test("cellCentre: cell = row * columns + column, column 1/64 of the width, row 16 px", () => {
    assert.deepEqual(plain(hm.cellCentre(0, 64, 16, 1280)), [10, 8]);
    assert.deepEqual(plain(hm.cellCentre(63, 64, 16, 1280)), [1270, 8]);
    assert.deepEqual(plain(hm.cellCentre(64, 64, 16, 1280)), [10, 24]);
    assert.deepEqual(plain(hm.cellCentre(3 * 64 + 5, 64, 16, 1280)), [110, 56]);
    assert.deepEqual(plain(hm.cellCentre(3 * 64 + 5, 64, 16, 640)), [55, 56], "x follows the document width");
    assert.deepEqual(plain(hm.cellCentre(2 * 10 + 9, 10, 20, 1000)), [950, 50], "other grid sizes");
  });

  test("reachLine: the deepest percent that at least the threshold reached", () => {
    const reach = Array.from({ length: 101 }, (_, p) => [p, Math.max(0.21, Math.round((1 - p / 100) * 100) / 100)]);
    assert.equal(hm.reachLine(reach, 0.75), 25, "reach exactly 0.75 counts");
    assert.equal(hm.reachLine(reach, 0.5), 50);
    assert.equal(hm.reachLine(reach, 0.25), 75);
    assert.equal(hm.reachLine(reach, 0.21), 100);
    assert.equal(hm.reachLine(reach, 0.2), 100);
    assert.equal(hm.reachLine(reach, 1), 0, "p = 0 is a depth, not 'none'");
    // everyone read the whole page: every line at 100
    assert.equal(hm.reachLine(Array.from({ length: 101 }, (_, p) => [p, 1]), 0.75), 100);
    // none reaching
    assert.equal(hm.reachLine(Array.from({ length: 101 }, (_, p) => [p, 0]), 0.25), null);
    assert.equal(hm.reachLine([[0, 0.6], [1, 0.5]], 0.75), null);
    assert.equal(hm.reachLine([], 0.5), null);
    assert.equal(hm.reachLine(undefined, 0.5), null);
    // order does not matter
    assert.equal(hm.reachLine([[40, 0.8], [10, 1], [60, 0.4]], 0.75), 40);
  });

  test("ramp: blue → green → yellow → red, clamped", () => {
    assert.deepEqual(plain(hm.ramp(0)), [0, 0, 255]);
    assert.deepEqual(plain(hm.ramp(1 / 3)), [0, 255, 0]);
    assert.deepEqual(plain(hm.ramp(2 / 3)), [255, 255, 0]);
    assert.deepEqual(plain(hm.ramp(1)), [255, 0, 0]);
    assert.deepEqual(plain(hm.ramp(0.5)), [128, 255, 0]);
    assert.deepEqual(plain(hm.ramp(1 / 6)), [0, 128, 128]);
    assert.deepEqual(plain(hm.ramp(-1)), [0, 0, 255]);
    assert.deepEqual(plain(hm.ramp(NaN)), [0, 0, 255]);
    assert.deepEqual(plain(hm.ramp(7)), [255, 0, 0]);
  });

  test("intensity and colourise", () => {
    assert.equal(hm.intensity(340, 340), 1);
    assert.equal(hm.intensity(0, 340), 0);
    assert.equal(hm.intensity(5, 0), 0);
    assert.ok(hm.intensity(1, 340) > 0.1 && hm.intensity(1, 340) < hm.intensity(2, 340));
    const data = new Uint8ClampedArray([9, 9, 9, 0, 0, 0, 0, 255, 0, 0, 0, 85]);
    hm.colourise(data);
    assert.deepEqual([...data], [9, 9, 9, 0, 255, 0, 0, 210, 0, 255, 0, 136]);
  });

  test("tipText, stripHash, errorText", () => {
    assert.equal(hm.tipText({ selector: "main > button#buy", clicks: 40, rage: 3, dead: 1 }), "40 clicks · 3 rage · 1 dead · main > button#buy");
    assert.equal(hm.tipText({ selector: "a", clicks: 1, rage: 0, dead: 0 }), "1 click · a");
    assert.equal(hm.stripHash("#cs-heatmap=abc"), "");
    assert.equal(hm.stripHash("#top&cs-heatmap=abc"), "#top");
    assert.equal(hm.stripHash("#cs-heatmap=abc&x=1"), "#x=1");
    assert.equal(hm.stripHash("#a&cs-heatmap=abc&b"), "#a&b");
    assert.equal(hm.stripHash(""), "");
    assert.equal(hm.stripHash("#top&cs-heatmap=abc&cs-period=custom&cs-from=2026-11-01&cs-to=2026-11-07"), "#top");
    assert.equal(hm.rangeQuery("#top&cs-heatmap=abc&cs-period=custom&cs-from=2026-11-01&cs-to=2026-11-07&x=1"), "period=custom&from=2026-11-01&to=2026-11-07");
    assert.equal(hm.rangeQuery("#cs-heatmap=abc&cs-start=2026-11-01T00%3A00%3A00Z"), "start=2026-11-01T00%3A00%3A00Z");
    assert.equal(hm.rangeQuery("#cs-heatmap=abc&cs-period=7d&x"), "period=7d");
    assert.equal(hm.rangeQuery("#cs-heatmap=abc&cs-period=7d&days=1"), "period=7d", "only the overlay's parts");
    assert.equal(hm.rangeQuery("#cs-heatmap=abc"), "");
    assert.equal(hm.rangeQuery("#cs-period=a b&c"), "period=a%20b");
    assert.equal(hm.errorText(401, { error: "token: expired" }), "token: expired — open View on page again");
    assert.equal(hm.errorText(401, { error: "token: expired — open View on page again" }), "token: expired — open View on page again");
    assert.equal(hm.errorText(403, { error: "origin: not allowed for this site" }), "origin: not allowed for this site");
    assert.equal(hm.errorText(502, null), "HTTP 502");
  });

  test("tagRect and labelsKept: a count that would overlap a busier one's is left out", () => {
    const e = (clicks, rage = 0, dead = 0) => ({ clicks, rage, dead });
    assert.deepEqual(plain(hm.tagRect(e(40), 100, 350)), [100, 336, 100 + 10 + 14, 352], "above the box, on its top border");
    assert.deepEqual(plain(hm.tagRect(e(7), 0, 5)), [0, 7, 17, 23], "inside it at the document's top");
    assert.equal(hm.tagRect(e(40, 3, 1), 100, 350)[2], 100 + 24 + 2 + (10 + 7 * 8) + 2 + (10 + 7 * 6), "the rage and dead tags too");
    assert.deepEqual(plain(hm.tagRect(e(40), 380, 350, 390)), [366, 336, 390, 352], "moved left to end at the document's edge");
    assert.deepEqual(plain(hm.tagRect(e(40, 3, 1), 5, 350, 100)), [0, 336, 146, 352], "never past its left edge");
    // Three spots 10 px apart in a row (a phone's nav), then one far below.
    const rects = [[0, 0, 30, 16], [10, 0, 40, 16], [20, 10, 50, 26], [0, 100, 30, 116]];
    assert.deepEqual(plain(hm.labelsKept(rects)), [true, false, false, true]);
    assert.deepEqual(plain(hm.labelsKept([[0, 0, 30, 16], [33, 0, 60, 16]])), [true, true], "3 px apart: both");
    assert.deepEqual(plain(hm.labelsKept([[0, 0, 30, 16], [31, 0, 60, 16]])), [true, false], "1 px apart: too close");
    assert.deepEqual(plain(hm.labelsKept([[0, 0, 30, 16], [0, 19, 30, 35]])), [true, true], "one above the other");
    assert.deepEqual(plain(hm.labelsKept([])), []);
  });

  test("the source: no HTML parsing of API text, no third-party code, one global", () => {
    assert.ok(!/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/.test(SOURCE));
    assert.ok(!/\bimport\b|require\(|https?:\/\/(?!\S*example)/.test(SOURCE.replace(/\/\*![\s\S]*?\*\//, "")));
    const context = vm.createContext({});
    const before = Object.keys(context);
    vm.runInContext(SOURCE, context);
    assert.deepEqual(Object.keys(context).filter((k) => !before.includes(k)), ["__csHeatmap"]);
  });
});

// ---- a fake page ----

class Style {
  constructor() {
    this.props = {};
    this.raw = "";
  }
  get cssText() {
    return this.raw;
  }
  set cssText(text) {
    this.raw = text;
    this.props = {};
    for (const decl of text.split(";")) {
      const i = decl.indexOf(":");
      if (i > 0) this.props[decl.slice(0, i).trim()] = decl.slice(i + 1).replace(/!important\s*$/, "").trim();
    }
  }
  setProperty(name, value, priority) {
    assert.equal(priority, "important");
    this.props[name] = value;
  }
}

class Context2D {
  constructor(canvas, page) {
    this.canvas = canvas;
    this.calls = [];
    this.globalAlpha = 1;
    this.page = page;
  }
  createRadialGradient(...args) {
    const g = { args, stops: [], addColorStop: (o, c) => g.stops.push([o, c]) };
    return g;
  }
  fillRect(...args) {
    this.calls.push(["fillRect", args, this.fillStyle]);
  }
  drawImage(...args) {
    this.calls.push(["drawImage", args]);
  }
  // A few pixels whose alpha is the density (the real one would be w * h pixels).
  getImageData(...args) {
    this.calls.push(["getImageData", args]);
    return { data: new Uint8ClampedArray([0, 0, 0, 0, 0, 0, 0, 255, 0, 0, 0, 85]) };
  }
  putImageData(image, x, y) {
    this.calls.push(["putImageData", [[...image.data], x, y]]);
  }
}

class El {
  constructor(tag, page) {
    this.tagName = tag.toUpperCase();
    this.nodeType = 1;
    this.page = page;
    this.style = new Style();
    this.attrs = {};
    this.childNodes = [];
    this.parentNode = this.parentElement = null;
    this.listeners = [];
    this.rect = { left: 0, top: 0, width: 0, height: 0 };
    this.text = "";
  }
  get children() {
    return this.childNodes;
  }
  appendChild(c) {
    if (c.parentNode) c.parentNode.removeChild(c);
    c.parentNode = c.parentElement = this;
    this.childNodes.push(c);
    return c;
  }
  removeChild(c) {
    this.childNodes.splice(this.childNodes.indexOf(c), 1);
    c.parentNode = c.parentElement = null;
    return c;
  }
  get textContent() {
    return this.text + this.childNodes.map((c) => c.textContent).join("");
  }
  set textContent(v) {
    for (const c of this.childNodes.slice()) this.removeChild(c);
    this.text = String(v);
  }
  setAttribute(k, v) {
    this.attrs[k] = String(v);
  }
  getAttribute(k) {
    return Object.hasOwn(this.attrs, k) ? this.attrs[k] : null;
  }
  addEventListener(type, fn) {
    this.listeners.push({ type, fn });
  }
  removeEventListener(type, fn) {
    this.listeners = this.listeners.filter((l) => l.type !== type || l.fn !== fn);
  }
  dispatch(type, event = {}) {
    for (const l of this.listeners.filter((x) => x.type === type)) l.fn({ type, target: this, ...event });
  }
  getBoundingClientRect() {
    return { ...this.rect };
  }
  getContext(kind) {
    assert.equal(kind, "2d");
    if (!this.ctx) this.page.contexts.push((this.ctx = new Context2D(this, this.page)));
    return this.ctx;
  }
  *all() {
    for (const c of this.childNodes) {
      yield c;
      yield* c.all();
    }
  }
  // Overlay parts by data-cs-part.
  parts(name) {
    return [...this.all()].filter((e) => e.getAttribute("data-cs-part") === name);
  }
  part(name) {
    return this.parts(name)[0];
  }
}

const reach = Array.from({ length: 101 }, (_, p) => [p, Math.max(0.21, Math.round((1 - p / 100) * 100) / 100)]);
const EXAMPLE = {
  page: "/pricing",
  vp: ">1024",
  days: 30,
  start: "2026-10-26T00:00:00Z",
  end: "2026-11-25T13:00:00Z",
  layouts: { "<640": 12, "640-1024": 0, ">1024": 340 },
  clicks: 340,
  grid: { columns: 64, row_px: 16, cells: [[0, 10], [3 * 64 + 5, 300], [100 * 64 + 63, 1]] },
  elements: [
    { selector: "main > button#buy", clicks: 40, rage: 3, dead: 1 },
    { selector: "nav > a.pricing", clicks: 25, rage: 0, dead: 0 },
    { selector: "text:Buy now", clicks: 8, rage: 0, dead: 0 }, // a label: querySelector throws
    { selector: "div.gone", clicks: 3, rage: 1, dead: 0 }, // not on this page
    { selector: "aside > button#menu", clicks: 1, rage: 0, dead: 0 }, // on the page, not shown
    { selector: "#cs-heatmap-overlay", clicks: 2, rage: 0, dead: 0 }, // would be the overlay itself
  ],
  scroll: { views: 120, reach },
  fold: 900,
};

// The overlay loaded into a fake page at https://shop.example/pricing?ref=x#top&cs-heatmap=tok123,
// window 1280 × 800 scrolled to y 300, document 1280 × 2000.
// respond(url, options) → [status, body] | "network-error" | a promise of either.
function openOverlay({ respond = () => [200, EXAMPLE], innerWidth = 1280, token = "tok123", fragment = "#top&cs-heatmap=tok123" } = {}) {
  const page = { requests: [], contexts: [], timers: [], windowListeners: [], replaced: [] };
  const make = (tag) => new El(tag, page);
  const html = make("html");
  const body = html.appendChild(make("body"));
  const head = html.appendChild(make("head"));
  html.scrollWidth = 1280;
  html.scrollHeight = 2000;
  body.scrollHeight = 0;
  const buy = Object.assign(make("button"), { rect: { left: 100, top: 50, width: 120, height: 40 } });
  const link = Object.assign(make("a"), { rect: { left: 10, top: 5, width: 300, height: 30 } });
  const menu = make("button"); // display: none: a 0 × 0 box
  body.appendChild(buy);
  body.appendChild(link);
  body.appendChild(menu);
  const selectors = { "main > button#buy": buy, "nav > a.pricing": link, "aside > button#menu": menu };

  const script = head.appendChild(make("script"));
  script.src = "https://app.example/static/sessions_app/heatmap.js";
  if (token) script.setAttribute("data-token", token);
  script.setAttribute("data-site", "cs_test");
  script.setAttribute("data-api", "https://app.example");

  let href = "https://shop.example/pricing?ref=x" + fragment;
  const location = {
    get href() {
      return href;
    },
    get pathname() {
      return new URL(href).pathname;
    },
    get search() {
      return new URL(href).search;
    },
    get hash() {
      return new URL(href).hash;
    },
  };
  const history = {
    state: { app: 1 },
    replaceState(state, title, url) {
      page.replaced.push([state, url]);
      href = new URL(url, href).href;
    },
  };
  const document = {
    readyState: "complete",
    currentScript: script,
    documentElement: html,
    body,
    head,
    listeners: [],
    createElement: make,
    querySelector(selector) {
      if (/^text:/.test(selector)) throw new SyntaxError(`'${selector}' is not a valid selector`);
      if (selector.startsWith("#")) return [...html.all()].find((e) => e.id === selector.slice(1)) || null;
      return selectors[selector] || null;
    },
    addEventListener(type, fn) {
      this.listeners.push({ type, fn });
    },
    removeEventListener(type, fn) {
      this.listeners = this.listeners.filter((l) => l.type !== type || l.fn !== fn);
    },
  };
  let timerId = 0;
  const sandbox = {
    document,
    location,
    history,
    innerWidth,
    innerHeight: 800,
    scrollX: 0,
    scrollY: 300,
    fetch(url, options) {
      page.requests.push({ url, options });
      return Promise.resolve(respond(url, options)).then((answer) => {
        if (answer === "network-error") throw new TypeError("Failed to fetch");
        const [status, json] = answer;
        return { status, ok: status >= 200 && status < 300, json: () => (json === undefined ? Promise.reject(new SyntaxError("not JSON")) : Promise.resolve(json)) };
      });
    },
    setTimeout(fn, ms) {
      page.timers.push({ id: ++timerId, fn, ms });
      return timerId;
    },
    clearTimeout(id) {
      page.timers = page.timers.filter((t) => t.id !== id);
    },
    addEventListener(type, fn) {
      page.windowListeners.push({ type, fn });
    },
    removeEventListener(type, fn) {
      page.windowListeners = page.windowListeners.filter((l) => l.type !== type || l.fn !== fn);
    },
  };
  sandbox.window = sandbox;
  vm.runInContext(SOURCE, vm.createContext(sandbox), { filename: "heatmap.js" });
  Object.defineProperty(page, "root", {
    get: () => html.childNodes.find((e) => e.id === "cs-heatmap-overlay") || null,
  });
  return Object.assign(page, {
    window: sandbox,
    document,
    html,
    elements: { buy, link, menu },
    part(name) {
      return this.root.part(name);
    },
    notes() {
      return this.part("notes").childNodes.map((n) => n.textContent);
    },
    async settle() {
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    },
    runTimers() {
      const due = page.timers.splice(0);
      for (const t of due) t.fn();
    },
    visibleContext() {
      return this.part("canvas").ctx;
    },
  });
}

describe("heatmap.js overlay", () => {
  test("requests the heatmap of this page for this window's layout, 30 days, Bearer token, no credentials", async () => {
    const page = openOverlay();
    assert.equal(page.requests.length, 1);
    const [req] = page.requests;
    assert.equal(req.url, "https://app.example/api/heatmap?page=%2Fpricing&vp=%3E1024&days=30");
    assert.deepEqual(plain(req.options.headers), { Authorization: "Bearer tok123" });
    assert.equal(req.options.credentials, "omit");
    assert.equal(req.options.method ?? "GET", "GET");
    assert.deepEqual(page.notes(), ["Loading…"]);
    await page.settle();
    assert.equal(page.requests.length, 1);
  });

  test("the layout class follows the window width", () => {
    for (const [width, vp] of [[639, "%3C640"], [640, "640-1024"], [1024, "640-1024"], [1025, "%3E1024"]]) {
      const page = openOverlay({ innerWidth: width });
      assert.match(page.requests[0].url, new RegExp(`&vp=${vp}&days=30$`));
      assert.equal(page.part("layout").value, decodeURIComponent(vp));
    }
  });

  test("one container with the canvas, the toolbar and a box per element found", async () => {
    const page = openOverlay();
    await page.settle();
    const root = page.root;
    assert.ok(root, "the container");
    assert.equal(page.html.childNodes.filter((e) => e.id === "cs-heatmap-overlay").length, 1);
    assert.equal(root.style.props.position, "absolute");
    // every inline style is !important, starting from all: initial
    for (const el of [root, ...root.all()].filter((e) => e.style.raw && !/^(SELECT|INPUT)$/.test(e.tagName))) {
      assert.match(el.style.raw, /^all:initial!important;/);
      for (const decl of el.style.raw.split(";")) assert.match(decl, /!important$/, decl);
    }

    // toolbar
    const bar = page.part("toolbar");
    assert.equal(bar.style.props.position, "fixed");
    assert.equal(bar.style.props.right, "12px");
    assert.ok(bar.textContent.startsWith("Heatmap/pricing×"), bar.textContent);
    assert.equal(page.part("range").value, "30");
    assert.deepEqual(page.part("range").childNodes.map((o) => [o.value, o.textContent]), [["7", "Last 7 days"], ["30", "Last 30 days"], ["90", "Last 90 days"]]);
    assert.deepEqual(page.part("layout").childNodes.map((o) => [o.value, o.textContent]), [
      ["<640", "<640 px · 12 clicks"],
      ["640-1024", "640-1024 px · 0 clicks"],
      [">1024", ">1024 px · 340 clicks"],
    ]);
    for (const name of ["clicks", "elements", "scroll"]) {
      const box = page.part("toggle-" + name);
      assert.equal(box.type, "checkbox");
      assert.equal(box.checked, true);
    }
    assert.equal(page.part("total").textContent, "340 clicks in 30 days");
    // 8 (a label) + 3 (not here) + 1 (not shown) + 2 (the overlay's own id) clicks
    assert.deepEqual(page.notes(), ["14 clicks on elements not on this page"]);
    assert.equal(page.part("notes").childNodes[0].title, "text:Buy now\ndiv.gone\naside > button#menu\n#cs-heatmap-overlay");

    // canvas: document (0, 0), document size, no pointer events
    const canvas = page.part("canvas");
    assert.equal(canvas.tagName, "CANVAS");
    assert.deepEqual([canvas.width, canvas.height], [1280, 2000]);
    assert.deepEqual(
      [canvas.style.props.left, canvas.style.props.top, canvas.style.props.width, canvas.style.props.height, canvas.style.props["pointer-events"]],
      ["0", "0", "1280px", "2000px", "none"]
    );

    // element boxes: the larger one first, document coordinates (scrollY 300)
    const boxes = page.root.parts("box");
    assert.equal(boxes.length, 2);
    const pos = (b) => ["left", "top", "width", "height"].map((k) => b.style.props[k]);
    assert.deepEqual(pos(boxes[0]), ["10px", "305px", "300px", "30px"]);
    assert.deepEqual(pos(boxes[1]), ["100px", "350px", "120px", "40px"]);
    assert.equal(boxes[0].textContent, "25");
    assert.equal(boxes[1].textContent, "40⚡ rage 3dead 1");
    const markers = boxes[1].childNodes[0].childNodes.map((s) => [s.textContent, s.style.props.background]);
    assert.deepEqual(markers, [["40", "#f08c00"], ["⚡ rage 3", "#d64545"], ["dead 1", "#7b8794"]]);
    assert.equal(boxes[1].style.props["pointer-events"], undefined, "boxes take pointer events (all: initial: auto)");

    // tooltip on hover
    const tip = page.part("tip");
    assert.equal(tip.style.props.display, "none");
    boxes[1].dispatch("mouseenter");
    assert.equal(tip.textContent, "40 clicks · 3 rage · 1 dead · main > button#buy");
    assert.deepEqual([tip.style.props.display, tip.style.props.left, tip.style.props.top], ["block", "100px", "394px"]);
    boxes[1].dispatch("mouseleave");
    assert.equal(tip.style.props.display, "none");
    boxes[0].dispatch("mouseenter");
    assert.equal(tip.textContent, "25 clicks · nav > a.pricing");
  });

  test("click density: a radial blob a cell in an offscreen canvas, alpha mapped to the ramp", async () => {
    const page = openOverlay();
    await page.settle();
    const visible = page.visibleContext();
    const offscreen = page.contexts.find((c) => c !== visible);
    assert.deepEqual([offscreen.canvas.width, offscreen.canvas.height], [1280, 2000]);
    const fills = offscreen.calls.filter((c) => c[0] === "fillRect");
    assert.equal(fills.length, 3);
    // radius 1.5 × max(column width 20, row 16) = 30
    assert.deepEqual(fills.map((c) => c[1]), [[-20, -22, 60, 60], [80, 26, 60, 60], [1240, 1578, 60, 60]]);
    const [, , busiest] = fills[1];
    assert.deepEqual(busiest.args, [110, 56, 0, 110, 56, 30]);
    assert.deepEqual(busiest.stops, [[0, "rgba(0,0,0,1)"], [1, "rgba(0,0,0,0)"]]);
    const alpha = (c) => +/rgba\(0,0,0,([\d.]+)\)/.exec(c[2].stops[0][1])[1];
    assert.ok(alpha(fills[2]) > 0.1 && alpha(fills[2]) < alpha(fills[0]) && alpha(fills[0]) < 1, "relative to the max cell");
    assert.deepEqual(offscreen.calls.find((c) => c[0] === "getImageData")[1], [0, 0, 1280, 2000]);
    const put = visible.calls.filter((c) => c[0] === "putImageData");
    assert.equal(put.length, 1);
    assert.deepEqual(put[0][1], [[0, 0, 0, 0, 255, 0, 0, 210, 0, 255, 0, 136], 0, 0]);
  });

  test("scroll depth: lines at 75 %, 50 %, 25 % reach and the fold", async () => {
    const page = openOverlay();
    await page.settle();
    const lines = page.root.parts("line").map((l) => [l.style.props.top, l.style.props["border-top"], l.textContent]);
    assert.deepEqual(lines, [
      ["500px", "2px solid #e8590c", "75% of visitors reach here"],
      ["1000px", "2px solid #e8590c", "50% of visitors reach here"],
      ["1500px", "2px solid #e8590c", "25% of visitors reach here"],
      ["900px", "2px dashed #1f2933", "average fold"],
    ]);
    assert.equal(page.root.parts("line")[0].style.props.width, "1280px");
    // The reach lines' labels on the left, the fold's on the right: at one depth they do not collide.
    const sides = page.root.parts("line").map((l) => [l.childNodes[0].style.props.left, l.childNodes[0].style.props.right]);
    assert.deepEqual(sides, [["8px", undefined], ["8px", undefined], ["8px", undefined], [undefined, "8px"]]);
  });

  test("scroll depth: thresholds at one depth make one line; no views: 'no scroll data'", async () => {
    const all = Array.from({ length: 101 }, (_, p) => [p, p < 90 ? 1 : 0.6]);
    let page = openOverlay({ respond: () => [200, { ...EXAMPLE, elements: [], scroll: { views: 3, reach: all }, fold: null }] });
    await page.settle();
    assert.deepEqual(page.root.parts("line").map((l) => [l.style.props.top, l.textContent]), [["1780px", "75% of visitors reach here"], ["1998px", "50% of visitors reach here"]]);
    page = openOverlay({ respond: () => [200, { ...EXAMPLE, elements: [], scroll: { views: 0, reach: [] }, fold: null }] });
    await page.settle();
    assert.equal(page.root.parts("line").length, 0);
    assert.deepEqual(page.notes(), ["no scroll data"]);
  });

  test("layer toggles hide and show a layer", async () => {
    const page = openOverlay();
    await page.settle();
    for (const name of ["clicks", "elements", "scroll"]) {
      const box = page.part("toggle-" + name), layer = page.part(name);
      box.checked = false;
      box.dispatch("change");
      assert.equal(layer.style.props.display, "none");
      box.checked = true;
      box.dispatch("change");
      assert.equal(layer.style.props.display, "block");
    }
    assert.ok(page.part("clicks").part("canvas"));
    assert.equal(page.part("elements").parts("box").length, 2);
    assert.equal(page.part("scroll").parts("line").length, 4);
  });

  test("changing the range or the layout refetches and redraws", async () => {
    const page = openOverlay({
      respond: (url) => [200, url.includes("days=7") ? { ...EXAMPLE, days: 7, clicks: 5, elements: EXAMPLE.elements.slice(0, 1) } : EXAMPLE],
    });
    await page.settle();
    const range = page.part("range");
    range.value = "7";
    range.dispatch("change");
    await page.settle();
    assert.equal(page.requests[1].url, "https://app.example/api/heatmap?page=%2Fpricing&vp=%3E1024&days=7");
    assert.equal(page.part("total").textContent, "5 clicks in 7 days");
    assert.equal(page.root.parts("box").length, 1);
    const layout = page.part("layout");
    layout.value = "<640";
    layout.dispatch("change");
    await page.settle();
    assert.equal(page.requests[2].url, "https://app.example/api/heatmap?page=%2Fpricing&vp=%3C640&days=7");
    assert.equal(page.requests[2].options.headers.Authorization, "Bearer tok123");
  });

  test("opens on the Heatmaps page's range from the link, says it, and may switch to another", async () => {
    const RANGED = { ...EXAMPLE, days: 7, range: { label: "Last 7 days", days: "19 Nov – 25 Nov 2026", note: "", params: { period: "7d" } } };
    const page = openOverlay({
      fragment: "#cs-heatmap=tok123&cs-period=7d",
      respond: (url) => [200, url.includes("days=90") ? { ...EXAMPLE, days: 90, clicks: 9, range: { label: "27 Aug 2026 – 25 Nov 2026", days: "27 Aug – 25 Nov 2026", note: "" } } : RANGED],
    });
    assert.equal(page.requests[0].url, "https://app.example/api/heatmap?page=%2Fpricing&vp=%3E1024&period=7d");
    await page.settle();
    const range = page.part("range");
    assert.equal(range.value, "page");
    assert.deepEqual(range.childNodes.map((o) => [o.value, o.textContent]), [["page", "Last 7 days (Heatmaps page)"], ["7", "Last 7 days"], ["30", "Last 30 days"], ["90", "Last 90 days"]]);
    assert.equal(page.part("total").textContent, "340 clicks · Last 7 days");
    assert.equal(page.part("shown").textContent, "19 Nov – 25 Nov 2026");
    range.value = "90";
    range.dispatch("change");
    await page.settle();
    assert.equal(page.requests[1].url, "https://app.example/api/heatmap?page=%2Fpricing&vp=%3E1024&days=90");
    assert.equal(page.part("total").textContent, "9 clicks · 27 Aug 2026 – 25 Nov 2026");
    assert.equal(page.part("shown").textContent, "27 Aug – 25 Nov 2026");
    range.value = "page";
    range.dispatch("change");
    await page.settle();
    assert.match(page.requests[2].url, /&period=7d$/);
    page.part("close").dispatch("click");
    assert.equal(page.window.location.href, "https://shop.example/pricing?ref=x", "the range's parts go with the token");
  });

  test("a capped range says so beside its days", async () => {
    const capped = { label: "Last 12 months", days: "26 Aug – 25 Nov 2026", note: "Heatmaps cover at most 92 days: showing the last 92 days of Last 12 months" };
    const page = openOverlay({ fragment: "#cs-heatmap=tok123&cs-period=12mo", respond: () => [200, { ...EXAMPLE, range: capped }] });
    await page.settle();
    assert.equal(page.part("shown").textContent, `26 Aug – 25 Nov 2026 · ${capped.note}`);
  });

  test("close elements keep their boxes and colours; only the busier one's count is drawn", async () => {
    const page = openOverlay({
      respond: () => [200, { ...EXAMPLE, elements: [EXAMPLE.elements[1], { ...EXAMPLE.elements[0], clicks: 20 }] }],
    });
    // The button 8 px right of the link's top left corner: their counts would collide.
    Object.assign(page.elements.buy.rect, { left: 18, top: 5, width: 60, height: 30 });
    await page.settle();
    const boxes = page.root.parts("box");
    assert.equal(boxes.length, 2, "both boxes");
    assert.deepEqual(boxes.map((b) => b.parts("tags").length), [1, 0], "the link (25 clicks) keeps its count, the button (20) not");
    assert.equal(boxes[0].textContent, "25");
    assert.deepEqual(page.notes(), ["1 count not shown where elements are close: hover or tap a box for its clicks"]);
    boxes[1].dispatch("mouseenter");
    assert.equal(page.part("tip").textContent, "20 clicks · 3 rage · 1 dead · main > button#buy");
    assert.ok(page.visibleContext().calls.some((c) => c[0] === "putImageData"), "the colours are drawn");
  });

  test("an answer overtaken by a newer request is dropped", async () => {
    let release;
    const slow = new Promise((r) => (release = r));
    const page = openOverlay({ respond: (url) => (url.includes("days=30") ? slow : [200, { ...EXAMPLE, days: 90, clicks: 7 }]) });
    const range = page.part("range");
    range.value = "90";
    range.dispatch("change");
    await page.settle();
    assert.equal(page.part("total").textContent, "7 clicks in 90 days");
    release([200, EXAMPLE]);
    await page.settle();
    assert.equal(page.part("total").textContent, "7 clicks in 90 days");
  });

  test("a window resize redraws (debounced) at the new document size; a huge document is scaled", async () => {
    const page = openOverlay();
    await page.settle();
    assert.deepEqual(page.windowListeners.map((l) => l.type).sort(), ["load", "resize"]);
    page.html.scrollHeight = 40000;
    const resize = page.windowListeners.find((l) => l.type === "resize").fn;
    resize();
    resize();
    assert.equal(page.timers.length, 1, "debounced");
    assert.equal(page.timers[0].ms, 200);
    page.runTimers();
    const canvas = page.part("canvas");
    // 16000 px high at most: scale 0.4
    assert.deepEqual([canvas.width, canvas.height], [512, 16000]);
    assert.deepEqual([canvas.style.props.width, canvas.style.props.height], ["1280px", "40000px"]);
    assert.equal(page.requests.length, 1, "no refetch");
    assert.equal(page.root.parts("line")[0].style.props.top, "10000px");
  });

  test("close removes everything and the cs-heatmap part of the URL", async () => {
    const page = openOverlay();
    await page.settle();
    assert.equal(typeof page.window.__csHeatmap.close, "function");
    page.part("close").dispatch("click");
    assert.equal(page.root, null);
    assert.equal([...page.html.all()].filter((e) => e.getAttribute("data-cs-part")).length, 0);
    assert.deepEqual(plain(page.replaced), [[{ app: 1 }, "/pricing?ref=x#top"]]);
    assert.equal(page.window.location.href, "https://shop.example/pricing?ref=x#top");
    assert.deepEqual(page.windowListeners, []);
    assert.deepEqual(page.document.listeners, []);
    assert.equal(page.window.__csHeatmap, undefined);
  });

  test("Escape closes; an answer arriving after close is ignored", async () => {
    let release;
    const page = openOverlay({ respond: () => new Promise((r) => (release = r)) });
    page.document.listeners.find((l) => l.type === "keydown").fn({ key: "Enter" });
    assert.ok(page.root);
    page.document.listeners.find((l) => l.type === "keydown").fn({ key: "Escape" });
    assert.equal(page.root, null);
    release([200, EXAMPLE]);
    await page.settle();
    assert.equal(page.contexts.length, 0, "nothing drawn");
  });

  test("a 401 shows the API's error in the toolbar and draws nothing", async () => {
    const page = openOverlay({ respond: () => [401, { error: "token: expired" }] });
    await page.settle();
    assert.deepEqual(page.notes(), ["token: expired — open View on page again"]);
    assert.equal(page.part("notes").childNodes[0].style.props.color, "#c62828");
    assert.equal(page.root.parts("box").length, 0);
    assert.equal(page.root.parts("line").length, 0);
    assert.equal(page.part("canvas").width, 0);
    assert.equal(page.part("total").textContent, "");
  });

  test("other failures: 403, a body that is not JSON, no network, no token", async () => {
    let page = openOverlay({ respond: () => [403, { error: "origin: https://shop.example is not allowed for this site" }] });
    await page.settle();
    assert.deepEqual(page.notes(), ["origin: https://shop.example is not allowed for this site"]);
    page = openOverlay({ respond: () => [502, undefined] });
    await page.settle();
    assert.deepEqual(page.notes(), ["HTTP 502"]);
    page = openOverlay({ respond: () => "network-error" });
    await page.settle();
    assert.deepEqual(page.notes(), ["Cannot reach https://app.example: offline, or this site is not allowed"]);
    page = openOverlay({ token: null });
    await page.settle();
    assert.equal(page.requests.length, 0);
    assert.deepEqual(page.notes(), ["token: missing — open View on page again"]);
  });
  test("an answer not of the documented shape is reported, not thrown", async () => {
    const page = openOverlay({ respond: () => [200, { ...EXAMPLE, scroll: { views: 3, reach: 5 } }] });
    await page.settle();
    assert.match(page.notes()[0], /^Cannot draw the answer: .+/);
    assert.equal(page.root.parts("box").length, 0, "nothing half drawn");
    assert.equal(page.part("canvas").width, 0);
  });
});
