/*!
 * clickstream heatmap overlay, loaded by tracker.js on #cs-heatmap=<token>: the page's
 * click density, most clicked elements and scroll depth (GET <data-api>/api/heatmap),
 * drawn over the page. ES2017, no dependencies. All it adds is under #cs-heatmap-overlay;
 * its one global is window.__csHeatmap (the pure helpers, for tests, and close()). Text
 * from the API (from visitors' pages) is only ever set as textContent, never as HTML.
 */
(function (w) {
  "use strict";

  const LAYOUTS = ["<640", "640-1024", ">1024"];
  const LAYERS = ["clicks", "elements", "scroll"];
  const MAX_SIDE = 16000; // canvas px a side: a taller document is drawn scaled down
  const MAX_AREA = 16e6; // canvas px in all (iOS Safari draws nothing above 16.7M)

  // ---- pure helpers ----

  // The viewport class of a window `width` CSS px wide, as the API groups clicks.
  const layoutOf = (width) => (width < 640 ? "<640" : width <= 1024 ? "640-1024" : ">1024");

  // The centre of grid cell `cell` (row * columns + column) in document px: [x, y].
  function cellCentre(cell, columns, rowPx, docWidth) {
    const row = Math.floor(cell / columns);
    return [((cell - row * columns + 0.5) / columns) * docWidth, (row + 0.5) * rowPx];
  }

  // The deepest percent p that at least `threshold` (0-1) of page views reached, or null.
  function reachLine(reach, threshold) {
    let deepest = null;
    for (const [p, share] of reach || []) if (share >= threshold && (deepest === null || p > deepest)) deepest = p;
    return deepest;
  }

  // The colour of a density 0-1: blue, green, yellow, red at 0, 1/3, 2/3 and 1.
  const STOPS = [[0, 0, 255], [0, 255, 0], [255, 255, 0], [255, 0, 0]];
  function ramp(alpha) {
    const t = (alpha > 0 ? Math.min(alpha, 1) : 0) * 3, i = Math.min(Math.floor(t), 2);
    return STOPS[i].map((v, j) => Math.round(v + (STOPS[i + 1][j] - v) * (t - i)));
  }

  // The opacity of a cell's blob, n clicks, the busiest cell max: logarithmic, so that
  // cells with a few clicks stay visible next to a hot spot.
  const intensity = (n, max) => (n > 0 && max > 0 ? Math.log1p(n) / Math.log1p(max) : 0);

  // RGBA pixels whose alpha is the density, in place: the ramp's colour, translucent.
  let table;
  function colourise(data) {
    table = table || Array.from({ length: 256 }, (_, a) => ramp(a / 255));
    for (let i = 3; i < data.length; i += 4) {
      const a = data[i], c = table[a];
      if (!a) continue;
      data[i - 3] = c[0];
      data[i - 2] = c[1];
      data[i - 1] = c[2];
      data[i] = Math.round(Math.min(210, a * 1.6));
    }
    return data;
  }

  // The tags above an element's box: its clicks, its rage and dead clicks.
  const tagTexts = (e) => [String(e.clicks)].concat(e.rage > 0 ? [`⚡ rage ${e.rage}`] : [], e.dead > 0 ? [`dead ${e.dead}`] : []);

  // Where the tags of an element whose box is at (left, top) sit, in document px: [left,
  // top, right, bottom] (on its top border, above it, or inside it at the top of the
  // document; moved left to end by `maxRight`, the document's width, not past its left
  // edge); their width estimated at 7 px a character.
  function tagRect(e, left, top, maxRight = Infinity) {
    const width = tagTexts(e).reduce((sum, t) => sum + 10 + 7 * t.length + 2, -2);
    const y = top < 18 ? top + 2 : top - 14;
    const x = Math.max(0, Math.min(left, maxRight - width));
    return [x, y, x + width, y + 16];
  }

  // Which of these tags to draw, [left, top, right, bottom] each, the most clicked first:
  // each one that overlaps a tag already kept (within `gap` px) is left out, its box and
  // colours stay (a phone's elements are close together: their counts would collide).
  function labelsKept(rects, gap = 2) {
    const kept = [];
    return rects.map((r) => {
      const clear = kept.every((k) => r[0] >= k[2] + gap || r[2] + gap <= k[0] || r[1] >= k[3] + gap || r[3] + gap <= k[1]);
      if (clear) kept.push(r);
      return clear;
    });
  }

  const plural = (n, word) => `${n} ${word}${n == 1 ? "" : "s"}`;

  // An element's tooltip: "40 clicks · 3 rage · 1 dead · main > button#buy".
  function tipText(e) {
    const parts = [plural(e.clicks, "click")];
    if (e.rage > 0) parts.push(`${e.rage} rage`);
    if (e.dead > 0) parts.push(`${e.dead} dead`);
    return parts.concat(e.selector).join(" · ");
  }

  // The overlay's parts of a URL fragment: cs-heatmap (the token) and the Heatmaps
  // page's range (cs-period, cs-from, cs-to, cs-start, cs-end).
  const OWN = /^cs-(heatmap|period|from|to|start|end)=/;

  // A URL fragment without the overlay's parts ("" when nothing else is left).
  function stripHash(hash) {
    const rest = hash.replace(/^#/, "").split("&").filter((p) => p && !OWN.test(p));
    return rest.length ? "#" + rest.join("&") : "";
  }

  // The Heatmaps page's range in a URL fragment, as /api/heatmap's query parameters
  // ("period=custom&from=2026-11-01&to=2026-11-07"); "" when the link carries none.
  function rangeQuery(hash) {
    return hash.replace(/^#/, "").split("&").filter((p) => OWN.test(p) && !/^cs-heatmap=/.test(p))
      .map((p) => p.slice(3).replace(/[^\w.~%=-]/g, encodeURIComponent)).join("&");
  }

  // The toolbar's text for a failed request; the API answers {"error": "<field>: <reason>"}.
  function errorText(status, body) {
    const m = body && typeof body.error == "string" ? body.error : `HTTP ${status}`;
    return status == 401 && !/view on page/i.test(m) ? `${m} — open View on page again` : m;
  }

  if (w.__csHeatmap && w.__csHeatmap.close) return; // open already
  const ns = (w.__csHeatmap = { layoutOf, cellCentre, reachLine, ramp, intensity, colourise, tipText, stripHash, rangeQuery, errorText, tagRect, labelsKept });
  const d = w.document;
  if (!d) return; // tests of the helpers
  const script = d.currentScript || d.querySelector('script[src*="heatmap.js"][data-token]');
  if (d.readyState == "loading") d.addEventListener("DOMContentLoaded", start);
  else start();

  // ---- the overlay ----

  function start() {
    const de = d.documentElement;
    const attr = (k) => (script && script.getAttribute("data-" + k)) || "";
    const token = attr("token"), api = attr("api").replace(/\/+$/, "");
    // The range: the Heatmaps page's when its link carries one ("page"), else 7, 30 or
    // 90 days (an old link: 30).
    const pageRange = rangeQuery(location.hash);
    const state = { range: pageRange ? "page" : "30", vp: layoutOf(w.innerWidth), data: null, seq: 0, timer: 0 };

    // Styles are inline and !important, from `all: initial` (form controls keep their
    // look): page CSS cannot reach in. data-cs-part names parts, for tests and readers.
    const BASE = "all:initial;box-sizing:border-box;display:block;font:12px/1.4 system-ui,sans-serif;color:#1f2933;";
    const CONTROL = "margin:0;padding:2px;width:auto;max-width:none;height:auto;border:1px solid #cbd2d9;" +
      "background:#fff;font:12px sans-serif;color:#1f2933;";
    function make(tag, parent, css, text, name) {
      const el = d.createElement(tag);
      if (css != null) {
        css = (/^(input|select)$/.test(tag) ? CONTROL : BASE) + css;
        el.style.cssText = css.split(";").filter((s) => s.trim()).map((s) => s + "!important").join(";");
      }
      if (text != null) el.textContent = text;
      if (name) el.setAttribute("data-cs-part", name);
      return parent ? parent.appendChild(el) : el;
    }
    function put(el, props) {
      for (const k in props) el.style.setProperty(k, props[k], "important");
    }

    const root = make("div", null, "position:absolute;left:0;top:0;width:0;height:0;z-index:2147483600");
    root.id = "cs-heatmap-overlay";
    const layers = {}; // in drawing order: the density, the boxes, the scroll lines
    for (const name of LAYERS) layers[name] = make("div", root, "position:absolute;left:0;top:0", null, name);
    const canvas = make("canvas", layers.clicks, "position:absolute;left:0;top:0;pointer-events:none", null, "canvas");
    const tip = make("div", root, "position:absolute;display:none;max-width:420px;padding:4px 8px;" +
      "background:#1f2933;color:#fff;word-break:break-all;pointer-events:none", null, "tip");

    // ---- the toolbar ----
    // On a phone the toolbar sits at the bottom: the top of a page (its navigation) is
    // where clicks gather.
    const place = w.innerWidth < 640 ? "bottom:12px;left:12px;right:12px;width:auto;" : "top:12px;right:12px;width:310px;";
    const bar = make("div", root, `position:fixed;${place}padding:10px 12px;` +
      "border-radius:8px;background:#fff;box-shadow:0 4px 24px rgba(0,0,0,.3)", null, "toolbar");
    const row = () => make("div", bar, "display:flex;align-items:center;gap:8px;margin-bottom:6px");
    const head = row();
    make("b", head, "font-weight:700;font-size:14px", "Heatmap");
    make("span", head, "flex:1;color:#52606d;overflow:hidden;text-overflow:ellipsis;white-space:nowrap", location.pathname);
    const x = make("button", head, "cursor:pointer;font-size:18px;line-height:1", "×", "close");
    x.setAttribute("aria-label", "Close the heatmap");
    x.addEventListener("click", close);

    const selects = row();
    // A <select> of [value, label] pairs; returns its options.
    function choose(name, options, value, onChange) {
      const s = make("select", selects, "flex:1 1 0;min-width:0", null, name); // the row's width, shared
      const opts = options.map(([v, label]) => Object.assign(make("option", s, null, label), { value: v }));
      s.value = value;
      s.addEventListener("change", () => onChange(s.value));
      return opts;
    }
    const ranges = [7, 30, 90].map((n) => [String(n), `Last ${n} days`]);
    if (pageRange) ranges.unshift(["page", "As on the Heatmaps page"]);
    const rangeOptions = choose("range", ranges, state.range, (v) => ((state.range = v), load()));
    const vpOptions = choose("layout", LAYOUTS.map((c) => [c, c + " px"]), state.vp, (v) => ((state.vp = v), load()));

    const toggles = row();
    for (const name of LAYERS) {
      const label = make("label", toggles, "display:flex;gap:3px;cursor:pointer");
      const box = make("input", label, "appearance:auto", null, "toggle-" + name);
      box.type = "checkbox";
      box.checked = true;
      make("span", label, "", name);
      box.addEventListener("change", () => put(layers[name], { display: box.checked ? "block" : "none" }));
    }
    const total = make("div", bar, "font-weight:700", null, "total");
    const shown = make("div", bar, "color:#52606d", null, "shown"); // the range's days
    const notes = make("div", bar, "color:#52606d", null, "notes");
    // The toolbar's notes, [text, is an error, title] each.
    function say(lines) {
      notes.textContent = "";
      for (const [text, error, title] of lines) {
        const n = make("div", notes, error ? "color:#c62828" : "", text);
        if (title) n.title = title;
      }
    }

    // ---- data ----
    async function load() {
      const seq = ++state.seq, enc = encodeURIComponent;
      say([["Loading…"]]);
      let r = null, body = null;
      try {
        const range = state.range == "page" ? pageRange : `days=${state.range}`;
        r = await fetch(`${api}/api/heatmap?page=${enc(location.pathname)}&vp=${enc(state.vp)}&${range}`,
          { headers: { Authorization: "Bearer " + token }, credentials: "omit" });
        body = await r.json().catch(() => null);
      } catch (e) {
        r = null; // offline, or this site's origin not allowed (CORS)
      }
      if (seq != state.seq) return; // a newer request is under way, or closed
      state.data = r && r.ok && body ? body : null;
      try {
        draw();
      } catch (e) {
        state.data = null; // not the documented shape: draw nothing
        draw();
        return say([[`Cannot draw the answer: ${e.message}`, 1]]);
      }
      if (!r) say([[`Cannot reach ${api}: offline, or this site is not allowed`, 1]]);
      else if (!state.data) say([[errorText(r.status, body), 1]]);
    }

    // ---- drawing ----
    function draw() {
      clearTimeout(state.timer);
      layers.elements.textContent = layers.scroll.textContent = total.textContent = shown.textContent = "";
      canvas.width = canvas.height = 0;
      put(tip, { display: "none" });
      const data = state.data;
      if (!data) return;
      // The document's size without the overlay (which must not stretch it).
      put(root, { display: "none" });
      const W = de.scrollWidth || w.innerWidth;
      const H = Math.max(de.scrollHeight, d.body ? d.body.scrollHeight : 0) || w.innerHeight;
      put(root, { display: "block" });

      // Which range the numbers are of: its name and days, as the Heatmaps page says them.
      const range = data.range && typeof data.range.label == "string" ? data.range : null;
      if (range) {
        total.textContent = `${plural(data.clicks || 0, "click")} · ${range.label}`;
        shown.textContent = [range.days, range.note].filter(Boolean).join(" · ");
        if (state.range == "page") rangeOptions[0].textContent = `${range.label} (Heatmaps page)`;
      } else total.textContent = `${plural(data.clicks || 0, "click")} in ${data.days || state.range} days`;
      vpOptions.forEach((o, i) => (o.textContent = `${LAYOUTS[i]} px · ${plural((data.layouts || {})[LAYOUTS[i]] || 0, "click")}`));
      drawClicks(data.grid || {}, W, H);
      const lines = [], missing = drawElements(data.elements || []);
      if (missing.hidden) lines.push([`${plural(missing.hidden, "count")} not shown where elements are close: hover or tap a box for its clicks`]);
      if (missing.clicks) lines.push([`${plural(missing.clicks, "click")} on elements not on this page`, 0, missing.labels.join("\n")]);
      if (data.scroll && data.scroll.views) {
        const seen = [];
        for (const t of [0.75, 0.5, 0.25]) {
          const p = reachLine(data.scroll.reach, t);
          if (p === null || seen.includes(p)) continue; // at the depth of a higher threshold
          seen.push(p);
          line(Math.min((p / 100) * H, H - 2), W, `${t * 100}% of visitors reach here`, "solid #e8590c");
        }
      } else lines.push(["no scroll data"]);
      // Its label on the right: a reach line at the same depth has its own on the left.
      if (data.fold > 0 && data.fold < H) line(data.fold, W, "average fold", "dashed #1f2933", "right");
      say(lines);
    }

    // Click density: a radial gradient blob a cell, alpha only, in an offscreen canvas,
    // then each pixel's alpha mapped to the colour ramp. A huge document is scaled down.
    function drawClicks(grid, W, H) {
      const s = Math.min(1, MAX_SIDE / W, MAX_SIDE / H, Math.sqrt(MAX_AREA / (W * H)));
      const cw = (canvas.width = Math.max(1, Math.round(W * s))), ch = (canvas.height = Math.max(1, Math.round(H * s)));
      put(canvas, { width: W + "px", height: H + "px" });
      const cells = grid.cells || [], cols = grid.columns || 64, rowPx = grid.row_px || 16;
      const max = cells.reduce((m, c) => Math.max(m, c[1]), 0);
      const R = Math.max(2, Math.max(W / cols, rowPx) * 1.5 * s); // blob radius, canvas px
      if (!max) return;
      const off = d.createElement("canvas");
      off.width = cw;
      off.height = ch;
      const o = off.getContext("2d");
      if (!o) return; // no memory for the canvas
      for (const [cell, n] of cells) {
        const [cx, cy] = cellCentre(cell, cols, rowPx, W).map((v) => v * s);
        const g = o.createRadialGradient(cx, cy, 0, cx, cy, R);
        g.addColorStop(0, `rgba(0,0,0,${intensity(n, max)})`);
        g.addColorStop(1, "rgba(0,0,0,0)");
        o.fillStyle = g;
        o.fillRect(cx - R, cy - R, 2 * R, 2 * R);
      }
      const image = o.getImageData(0, 0, cw, ch);
      colourise(image.data);
      canvas.getContext("2d").putImageData(image, 0, 0);
    }

    // Element boxes, the largest first so that smaller ones lie on top to be hovered; the
    // counts of the most clicked where two would collide. Returns the clicks (and labels)
    // of elements not found on this page or not shown, and how many counts were left out.
    function drawElements(list) {
      const found = [], missing = { clicks: 0, labels: [], hidden: 0 };
      for (const e of list) {
        let el = null;
        try {
          el = d.querySelector(e.selector); // a label is often no valid selector
        } catch (err) {}
        for (let n = el; n; n = n.parentElement) if (n == root) el = null; // the overlay itself
        const r = el && el.getBoundingClientRect();
        if (r && (r.width || r.height)) found.push([e, r]);
        else if (e.clicks > 0) {
          missing.clicks += e.clicks;
          if (missing.labels.length < 20) missing.labels.push(e.selector);
        }
      }
      const at = (r) => [r.left + (w.scrollX || 0), r.top + (w.scrollY || 0)];
      const byClicks = found.slice().sort((a, b) => b[0].clicks - a[0].clicks); // list order breaks ties
      const W = de.scrollWidth || w.innerWidth;
      const rects = byClicks.map(([e, r]) => tagRect(e, ...at(r), W));
      const kept = labelsKept(rects);
      const tagLeft = new Map(); // element: its tags' CSS left in its box (inside its 2 px border)
      byClicks.forEach(([e, r], i) => kept[i] && tagLeft.set(e, rects[i][0] - at(r)[0] - 2));
      missing.hidden = found.length - tagLeft.size;
      found.sort((a, b) => b[1].width * b[1].height - a[1].width * a[1].height);
      for (const [e, r] of found) box(e, r, ...at(r), tagLeft.get(e));
      return missing;
    }

    // An element's box at (left, top), its tags at CSS left `tagLeft` in it (none if undefined).
    function box(e, r, left, top, tagLeft) {
      const b = make("div", layers.elements, `position:absolute;left:${left}px;top:${top}px;width:${r.width}px;` +
        `height:${r.height}px;border:2px solid #f08c00;background:rgba(240,140,0,.1);cursor:help`, null, "box");
      if (tagLeft !== undefined) {
        const tags = make("div", b, `position:absolute;left:${tagLeft}px;${top < 18 ? "top:0" : "bottom:100%"};display:flex;gap:2px;` +
          "height:16px;line-height:16px", null, "tags");
        const colours = ["#f08c00", e.rage > 0 ? "#d64545" : "#7b8794", "#7b8794"];
        tagTexts(e).forEach((text, i) => make("span", tags, `padding:0 5px;background:${colours[i]};color:#fff;` +
          "font-size:11px;font-weight:700;white-space:nowrap;line-height:16px", text));
      }
      b.addEventListener("mouseenter", () => {
        tip.textContent = tipText(e);
        put(tip, { display: "block", left: left + "px", top: top + r.height + 4 + "px" });
      });
      b.addEventListener("mouseleave", () => put(tip, { display: "none" }));
    }

    // A labelled line across the document at y px; border: "solid #e8590c"; its label at `side`.
    function line(y, W, text, border, side = "left") {
      const l = make("div", layers.scroll, `position:absolute;left:0;top:${Math.round(y)}px;width:${W}px;` +
        `border-top:2px ${border};pointer-events:none`, null, "line");
      make("span", l, `position:absolute;${side}:8px;${y < 24 ? "top:2px" : "bottom:2px"};padding:1px 6px;` +
        `background:${border.split(" ")[1]};color:#fff;font-size:11px;white-space:nowrap`, text);
    }

    // ---- lifecycle ----
    const later = () => {
      clearTimeout(state.timer);
      state.timer = setTimeout(draw, 200);
    };
    const onKey = (e) => e.key == "Escape" && close();
    const listen = (how) => {
      w[how]("resize", later);
      w[how]("load", later); // images and fonts change the document's size
      d[how]("keydown", onKey);
    };

    function close() {
      state.seq = -1; // answers still on their way are dropped
      clearTimeout(state.timer);
      listen("removeEventListener");
      if (root.parentNode) root.parentNode.removeChild(root);
      try {
        history.replaceState(history.state, "", location.pathname + location.search + stripHash(location.hash));
      } catch (e) {}
      delete w.__csHeatmap;
    }

    // At the top level, outside <body>: document coordinates even if <body> is positioned.
    de.appendChild(root);
    listen("addEventListener");
    ns.close = close;
    if (token) load();
    else say([["token: missing — open View on page again", 1]]);
  }
})(typeof window == "object" ? window : this);
