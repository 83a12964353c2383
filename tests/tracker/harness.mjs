// Test harness for the browser tracker: a tiny fake DOM and a fake browser (window,
// document, storage, cookies, timers, requestAnimationFrame, MutationObserver, layout
// sizes, fetch, sendBeacon) in which tracker.js or tracker.min.js runs inside a node:vm
// context. No third-party code.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import vm from "node:vm";
import { webcrypto } from "node:crypto";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
export const SOURCE_PATH = join(root, "static/sessions_app/tracker.js");
export const MIN_PATH = join(root, "static/sessions_app/tracker.min.js");

// ---- fake DOM ----

// Matches one compound selector of the forms the tracker uses: tag, [attr], [attr=value],
// tag[attr=value] (several attribute parts allowed).
function matchesCompound(el, selector) {
  const m = /^([a-z]*)((?:\[[^\]]+\])*)$/i.exec(selector);
  if (!m) throw new Error(`fake DOM cannot match selector ${selector}`);
  if (m[1] && el.tagName.toLowerCase() !== m[1].toLowerCase()) return false;
  for (const part of m[2].match(/\[[^\]]+\]/g) || []) {
    const [, name, value] = /^\[([\w-]+)(?:=["']?([^"'\]]*)["']?)?\]$/.exec(part);
    const actual = el.getAttribute(name);
    if (actual === null) return false;
    if (value !== undefined) {
      const ci = name === "type"; // HTML matches type values case-insensitively
      if (ci ? actual.toLowerCase() !== value.toLowerCase() : actual !== value) return false;
    }
  }
  return true;
}

export class FakeText {
  constructor(data) {
    this.nodeType = 3;
    this.data = data;
    this.parentElement = null;
  }
  get textContent() {
    return this.data;
  }
}

export class FakeElement {
  constructor(tag, attrs = {}, children = []) {
    this.nodeType = 1;
    this.tagName = tag.toUpperCase();
    this.attrs = Object.fromEntries(Object.entries(attrs).map(([k, v]) => [k, String(v)]));
    this.childNodes = [];
    this.parentElement = null;
    this.baseURI = "https://shop.example/products/1";
    this.liveValue = undefined; // what a user typed
    this.rect = { left: 0, top: 0, width: 0, height: 0 }; // getBoundingClientRect()
    for (const c of children) this.append(c);
  }
  append(child) {
    const node = typeof child === "string" ? new FakeText(child) : child;
    node.parentElement = this;
    this.childNodes.push(node);
    return this;
  }
  appendChild(child) {
    this.append(child);
    return child;
  }
  getAttribute(name) {
    return Object.hasOwn(this.attrs, name) ? this.attrs[name] : null;
  }
  setAttribute(name, value) {
    this.attrs[name] = String(value);
  }
  getBoundingClientRect() {
    return { ...this.rect };
  }
  get id() {
    return this.attrs.id || "";
  }
  get type() {
    const t = (this.attrs.type || "").toLowerCase();
    if (this.tagName === "INPUT") return t || "text";
    if (this.tagName === "BUTTON") return t || "submit";
    return t;
  }
  get value() {
    return this.liveValue !== undefined ? this.liveValue : this.attrs.value || "";
  }
  set value(v) {
    this.liveValue = v;
  }
  get href() {
    if (this.tagName !== "A" || this.attrs.href === undefined) return "";
    return new URL(this.attrs.href, this.baseURI).href;
  }
  get textContent() {
    return this.childNodes.map((c) => c.textContent).join("");
  }
  get isContentEditable() {
    for (let n = this; n; n = n.parentElement) {
      const v = n.getAttribute("contenteditable");
      if (v !== null) return v !== "false";
    }
    return false;
  }
  *descendants() {
    for (const c of this.childNodes) {
      if (c.nodeType === 1) {
        yield c;
        yield* c.descendants();
      }
    }
  }
  matches(selector) {
    return selector.split(",").some((s) => matchesCompound(this, s.trim()));
  }
  closest(selector) {
    for (let n = this; n; n = n.parentElement) if (n.matches(selector)) return n;
    return null;
  }
  querySelector(selector) {
    for (const d of this.descendants()) if (d.matches(selector)) return d;
    return null;
  }
}

// h("div", {class: "card"}, h("button", {id: "buy"}, "Buy"))
export function h(tag, attrs, ...children) {
  return new FakeElement(tag, attrs || {}, children);
}

// ---- loading the tracker ----

export function source(path = SOURCE_PATH) {
  return readFileSync(path, "utf8");
}

// The pure helpers of tracker.js, through its test hook (no document: the tracker does
// not start).
// CSS.escape for the fake DOM (browsers have it; Node does not): enough for the tests'
// class names and ids. The real one is exercised in Chromium (tests/e2e).
const CSS = { escape: (s) => String(s).replace(/[^\w-]/g, "\\$&") };

export function helpers(extraGlobals = {}) {
  let exported;
  const context = vm.createContext({ __csTest: (h) => (exported = h), CSS, ...extraGlobals });
  vm.runInContext(source(SOURCE_PATH), context, { filename: "tracker.js" });
  if (!exported) throw new Error("tracker.js did not call its test hook");
  return exported;
}

// A fake browser page with the tracker loaded into it.
//   opts.attrs       data-* attributes of the script tag (without "data-")
//   opts.storage     a shared Map for localStorage (survives "page loads"), or "broken"
//   opts.cookies     a shared Map as the cookie jar
//   opts.respond     (request) => status number or "network-error" (default 200), or a promise of one
//   opts.beacon      (url, blob) => boolean, or null for no navigator.sendBeacon
//   opts.navigator / opts.window: extra properties (doNotTrack, globalPrivacyControl ...)
//   Layout: window.innerWidth 1280, innerHeight 800, scrollY 0; document.documentElement
//   scrollWidth 1280, scrollHeight 800 (page.layout() changes them).
export function loadPage(file, opts = {}) {
  const storage = opts.storage === undefined ? new Map() : opts.storage;
  const cookies = opts.cookies || new Map();
  const href = opts.href || "https://shop.example/products/1";
  const scriptSrc = opts.src || "https://cdn.example/static/sessions_app/tracker.min.js";
  const requests = []; // {via: "fetch"|"beacon", url, body, options, type}
  const timers = [];
  let now = 0;
  let timerId = 0;
  const listeners = { window: [], document: [] };
  const page = { requests, timers, listeners, storage, cookies };

  const attrs = {};
  for (const [k, v] of Object.entries(opts.attrs || { site: "cs_test" })) attrs[`data-${k}`] = v;
  const script = h("script", { src: scriptSrc, ...attrs });
  script.src = scriptSrc;

  const localStorage =
    storage === "broken"
      ? {
          getItem() {
            throw new Error("SecurityError");
          },
          setItem() {
            throw new Error("SecurityError");
          },
          removeItem() {
            throw new Error("SecurityError");
          },
        }
      : {
          getItem: (k) => (storage.has(k) ? storage.get(k) : null),
          setItem: (k, v) => void storage.set(k, String(v)),
          removeItem: (k) => void storage.delete(k),
        };

  const location = {
    href,
    get protocol() {
      return new URL(this.href).protocol;
    },
    get hash() {
      return new URL(this.href).hash;
    },
  };
  const setUrl = (url) => {
    if (url !== undefined && url !== null) location.href = new URL(url, location.href).href;
  };
  const history = {
    calls: [],
    pushState(state, title, url) {
      this.calls.push(["pushState", url]);
      setUrl(url);
      return "push-result";
    },
    replaceState(state, title, url) {
      this.calls.push(["replaceState", url]);
      setUrl(url);
    },
  };
  const originalHistory = { pushState: history.pushState, replaceState: history.replaceState };

  // MutationObserver: page.mutate() queues a record for every connected observer; they
  // are delivered in a microtask, as browsers do; disconnect() drops undelivered ones.
  const observers = [];
  class MutationObserver {
    constructor(callback) {
      this.callback = callback;
      this.records = [];
      this.target = null;
      observers.push(this);
    }
    observe(target, options) {
      this.target = target;
      this.options = options;
    }
    disconnect() {
      this.target = null;
      this.records = [];
    }
    takeRecords() {
      return this.records.splice(0);
    }
  }
  page.observers = observers;

  const documentElement = h("html");
  documentElement.scrollWidth = 1280;
  documentElement.scrollHeight = 800;
  const body = h("body");
  body.scrollHeight = 0;
  const head = h("head");

  const document = {
    title: opts.title ?? "Product 1",
    referrer: opts.referrer ?? "https://search.example/?q=shoes",
    currentScript: opts.noCurrentScript ? null : script,
    visibilityState: "visible",
    readyState: "complete",
    documentElement,
    head,
    body,
    createElement: (tag) => h(tag),
    getElementsByTagName: (t) => (t === "script" ? opts.scripts || [h("script", { src: "/app.js" }), script] : []),
    addEventListener: (type, fn, capture) => listeners.document.push({ type, fn, capture }),
    get cookie() {
      return [...cookies].map(([k, v]) => `${k}=${v.value}`).join("; ");
    },
    set cookie(text) {
      page.cookieWrites = (page.cookieWrites || []).concat(text);
      const [pair, ...attrParts] = text.split(/;\s*/);
      const [name, value] = pair.split("=");
      const attributes = Object.fromEntries(attrParts.map((p) => p.split("=")));
      if (attributes["Max-Age"] === "0") cookies.delete(name);
      else cookies.set(name, { value, attributes });
    },
  };

  const navigator = { ...(opts.navigator || {}) };
  if (opts.beacon !== null) {
    navigator.sendBeacon = (url, blob) => {
      const result = opts.beacon ? opts.beacon(url, blob) : true;
      page.pending = (page.pending || []).concat(
        blob.text().then((text) => requests.push({ via: "beacon", url, body: JSON.parse(text), type: blob.type, result }))
      );
      return result;
    };
  }

  const fetch = (url, options) => {
    const request = { via: "fetch", url, options, body: JSON.parse(options.body) };
    requests.push(request);
    // respond may return a promise: the request stays in flight until it settles.
    return Promise.resolve(opts.respond ? opts.respond(request) : 200).then((status) => {
      if (status === "network-error") throw new TypeError("Failed to fetch");
      return { status, ok: status >= 200 && status < 300 };
    });
  };

  const addTimer = (fn, ms, repeat) => {
    const t = { id: ++timerId, fn, ms, at: now + ms, repeat };
    timers.push(t);
    return t.id;
  };
  const clearTimer = (id) => {
    const i = timers.findIndex((t) => t.id === id);
    if (i >= 0) timers.splice(i, 1);
  };

  const sandbox = {
    document,
    navigator,
    localStorage,
    location,
    history,
    fetch,
    crypto: opts.crypto === undefined ? webcrypto : opts.crypto,
    CSS,
    Blob,
    URL,
    setTimeout: (fn, ms) => addTimer(fn, ms || 0, false),
    setInterval: (fn, ms) => addTimer(fn, ms, true),
    clearTimeout: clearTimer,
    clearInterval: clearTimer,
    requestAnimationFrame: (fn) => addTimer(() => fn(now), 16, false),
    MutationObserver,
    innerWidth: 1280,
    innerHeight: 800,
    scrollY: 0,
    addEventListener: (type, fn, capture) => listeners.window.push({ type, fn, capture }),
    ...(opts.window || {}),
  };
  sandbox.window = sandbox;
  const context = vm.createContext(sandbox);
  if (opts.before) opts.before(sandbox);
  vm.runInContext(source(file), context, { filename: file });

  Object.assign(page, {
    window: sandbox,
    document,
    navigator,
    location,
    history,
    originalHistory,
    script,
    get api() {
      return sandbox.clickstream;
    },
    // Runs due timers while advancing the fake clock by ms; settles promises between.
    async tick(ms) {
      const end = now + ms;
      for (;;) {
        await settle();
        const due = timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.id - b.id)[0];
        if (!due) break;
        now = due.at;
        if (due.repeat) due.at += due.ms;
        else timers.splice(timers.indexOf(due), 1);
        due.fn();
      }
      now = end;
      await settle();
    },
    async settle() {
      await settle();
    },
    fire(target, type, event = {}) {
      const list = target === "window" ? listeners.window : listeners.document;
      for (const l of list.filter((x) => x.type === type)) l.fn({ type, ...event });
    },
    // at: pageX, pageY, clientX, clientY (default 0)
    click(target, timeStamp = ++page.clock, at = {}) {
      page.fire("document", "click", { target, timeStamp, pageX: 0, pageY: 0, clientX: 0, clientY: 0, ...at });
    },
    // A DOM change anywhere in the document.
    mutate() {
      for (const o of observers.filter((x) => x.target)) {
        o.records.push({ type: "childList", target: o.target });
        queueMicrotask(() => o.records.length && o.callback(o.takeRecords(), o));
      }
    },
    // sizes: innerWidth, innerHeight, scrollY, scrollWidth, scrollHeight, bodyHeight
    layout(sizes) {
      for (const k of ["innerWidth", "innerHeight", "scrollY"]) if (k in sizes) sandbox[k] = sizes[k];
      if ("scrollWidth" in sizes) documentElement.scrollWidth = sizes.scrollWidth;
      if ("scrollHeight" in sizes) documentElement.scrollHeight = sizes.scrollHeight;
      if ("bodyHeight" in sizes) body.scrollHeight = sizes.bodyHeight;
    },
    // Scrolls to y: a scroll event (the tracker measures in the next animation frame).
    scroll(y) {
      sandbox.scrollY = y;
      page.fire("window", "scroll");
    },
    hide() {
      document.visibilityState = "hidden";
      page.fire("document", "visibilitychange");
    },
    clock: 1000,
    events() {
      return requests.flatMap((r) => r.body.events);
    },
    retryStore() {
      return JSON.parse(storage.get("cs_retry") || "[]");
    },
  });

  async function settle() {
    for (let i = 0; i < 5; i++) {
      await Promise.all(page.pending || []);
      await new Promise((r) => setImmediate(r));
    }
  }
  return page;
}
