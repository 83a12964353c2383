// tracker.min.js is the build of tracker.js, within the 4 KB gzip budget.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import {
  buildReplay,
  buildTracker,
  GZIP_BUDGET,
  patchRecord,
  REPLAY_OUTPUT,
  sizes,
} from "../../scripts/build-tracker.mjs";
import { MIN_PATH, SOURCE_PATH } from "./harness.mjs";

test("tracker.min.js is up to date (run `npm run build`)", async () => {
  const source = readFileSync(SOURCE_PATH, "utf8");
  const built = await buildTracker(source);
  assert.equal(readFileSync(MIN_PATH, "utf8"), built);
  assert.equal(await buildTracker(source), built, "the build is deterministic");
});

test("minified and gzipped, the tracker is at most 4 KB", () => {
  assert.equal(GZIP_BUDGET, 4096);
  const s = sizes(readFileSync(SOURCE_PATH, "utf8"), readFileSync(MIN_PATH, "utf8"));
  assert.ok(s.gzip <= GZIP_BUDGET, `gzip ${s.gzip} > ${GZIP_BUDGET}`);
  assert.ok(s.min < s.raw);
});

test("the minified file has no test hook and no third-party code", () => {
  const min = readFileSync(MIN_PATH, "utf8");
  assert.ok(!min.includes("__csTest"));
  assert.ok(!/require\(|import\s/.test(min));
});

test("the minified file has the heatmap features: positions, rage and dead clicks, scroll depth, overlay", () => {
  const min = readFileSync(MIN_PATH, "utf8");
  for (const part of [
    "MutationObserver", // dead clicks
    "characterData",
    '"$pageleave"',
    "requestAnimationFrame", // scroll depth
    "passive",
    "getBoundingClientRect", // pos.ex/ey
    "Math.hypot", // rage
    "cs-heatmap=", // overlay loader
    "/static/sessions_app/", // its scripts, loaded beside it:
    '"heatmap.js"',
    '"vitals.min.js"', // web vitals, with data-vitals (docs/vitals.md)
    '"$vitals"',
    "data-token",
  ])
    assert.ok(min.includes(part), part);
  // the wire names survive minification
  for (const key of ["pos", "rage", "dead", "ex", "ey", "scroll", "fold", "pageview", "viewport"])
    assert.ok(new RegExp(`[{,.]${key}[:=]|"${key}"`).test(min), key);
});

test("the README states the tracker's gzip size as `npm run size` measures it", () => {
  const readme = readFileSync(join(dirname(SOURCE_PATH), "../../README.md"), "utf8");
  const s = sizes(readFileSync(SOURCE_PATH, "utf8"), readFileSync(MIN_PATH, "utf8"));
  const stated = /([\d,]+) bytes gzipped/.exec(readme);
  assert.ok(stated, "the README names the gzipped size");
  assert.equal(Number(stated[1].replace(/,/g, "")), s.gzip);
});

test("the recorder sets no style attribute: the customer's CSP would refuse it", async () => {
  const replay = readFileSync(REPLAY_OUTPUT, "utf8");
  assert.equal(await buildReplay(), replay, "replay.min.js is up to date (run `npm run build`)");
  assert.ok(!replay.includes('setAttribute("style"'));
  assert.ok(replay.includes("style.cssText=")); // rrweb's parse of a style's old value
  assert.throws(() => patchRecord("var a = 1;"), /0 style parses, expected 1/);
});
