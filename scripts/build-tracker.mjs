// Build and size check of the browser tracker (and its web vitals and replay scripts).
//   node scripts/build-tracker.mjs build  writes static/sessions_app/tracker.min.js and
//                                         vitals.min.js (web-vitals' attribution build +
//                                         vitals.js, loaded by the tracker on demand)
//   node scripts/build-tracker.mjs size   prints raw/min/gzip bytes; exits 1 when gzip is
//                                         over budget or a built file is not up to date
// The output depends only on tracker.js and the pinned terser version (deterministic).
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { minify } from "terser";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const SOURCE = join(root, "static/sessions_app/tracker.js");
export const OUTPUT = join(root, "static/sessions_app/tracker.min.js");
export const GZIP_BUDGET = 4096;
const BANNER = "/*! clickstream: docs/tracker.md */";
export const VITALS_SOURCE = join(root, "static/sessions_app/vitals.js");
export const VITALS_OUTPUT = join(root, "static/sessions_app/vitals.min.js");
const WEB_VITALS = join(root, "node_modules/web-vitals/dist/web-vitals.attribution.iife.js");
const VITALS_BANNER =
  "/*! clickstream web vitals: docs/vitals.md; web-vitals " +
  JSON.parse(readFileSync(join(root, "node_modules/web-vitals/package.json"), "utf8")).version +
  " (c) Google LLC, Apache-2.0 */";

export const REPLAY_SOURCE = join(root, "static/sessions_app/replay.js");
export const REPLAY_OUTPUT = join(root, "static/sessions_app/replay.min.js");
const RRWEB_RECORD = join(root, "node_modules/@rrweb/record/dist/record.umd.min.cjs");
const FFLATE = join(root, "node_modules/fflate/umd/index.js");
const version = (name) =>
  JSON.parse(readFileSync(join(root, `node_modules/${name}/package.json`), "utf8")).version;
const REPLAY_BANNER =
  `/*! clickstream session replay: docs/replay.md; @rrweb/record ${version("@rrweb/record")} ` +
  `(c) rrweb authors, MIT; fflate ${version("fflate")} (c) Arjun Barrett, MIT */`;

// rrweb's recorder diffs a changed style attribute against its old value parsed by
// setAttribute("style") on a detached element: the customer's CSP without
// 'unsafe-inline' refuses that (a console error each change) and the diff then misses the
// properties removed. Parsed through the CSSOM instead (style.cssText: no CSP applies).
// The build fails when rrweb's code no longer has it once (a new version: look again).
const STYLE_PARSE = /\b(\w+)\.setAttribute\("style",(\w+)\.oldValue\)/g;
export function patchRecord(source) {
  const found = source.match(STYLE_PARSE) || [];
  if (found.length !== 1) throw new Error(`rrweb: ${found.length} style parses, expected 1`);
  return source.replace(STYLE_PARSE, "($1.style.cssText=$2.oldValue)");
}

// The recorder: rrweb's and fflate's UMD builds, each given its own module object (so
// neither defines a global nor an AMD module on the customer's page), then replay.js.
export async function buildReplay() {
  const umd = (text) => "load(function (module, exports) { var define;\n" + text + "\n})";
  const record = patchRecord(readFileSync(RRWEB_RECORD, "utf8"));
  const source =
    "(function () {\nfunction load(f) { var module = { exports: {} }; f(module, module.exports); " +
    "return module.exports; }\n" +
    `var CS_RECORD = ${umd(record)}.record;\n` +
    `var CS_FFLATE = ${umd(readFileSync(FFLATE, "utf8"))};\n` +
    readFileSync(REPLAY_SOURCE, "utf8") +
    "\n})();";
  const result = await minify(source, {
    ecma: 2020,
    compress: { passes: 1 },
    mangle: true,
    format: { comments: false, preamble: REPLAY_BANNER },
  });
  return result.code + "\n";
}

export async function buildVitals() {
  const source = readFileSync(WEB_VITALS, "utf8") + "\n" + readFileSync(VITALS_SOURCE, "utf8");
  const result = await minify(source, {
    ecma: 2020, // web-vitals itself is ES2020
    compress: { passes: 2, global_defs: { CS_BUILD: true } },
    mangle: true,
    format: { comments: false, preamble: VITALS_BANNER },
  });
  return result.code + "\n";
}

export async function buildTracker(source = readFileSync(SOURCE, "utf8")) {
  const result = await minify(source, {
    // ES2015 output (arrow functions where `this` is unused): every browser with fetch has it.
    ecma: 2015,
    compress: { passes: 3, unsafe_arrows: true, global_defs: { CS_BUILD: true } }, // drops the test hook
    mangle: true,
    format: { comments: false, preamble: BANNER },
  });
  return result.code + "\n";
}

export function sizes(source, minified) {
  return {
    raw: Buffer.byteLength(source),
    min: Buffer.byteLength(minified),
    gzip: gzipSync(minified, { level: 9 }).length,
  };
}

async function main(command) {
  const source = readFileSync(SOURCE, "utf8");
  const built = await buildTracker(source);
  const vitals = await buildVitals();
  const replay = await buildReplay();
  if (command === "build") {
    writeFileSync(OUTPUT, built);
    writeFileSync(VITALS_OUTPUT, vitals);
    writeFileSync(REPLAY_OUTPUT, replay);
    console.log(`wrote ${REPLAY_OUTPUT}: gzip ${sizes("", replay).gzip} B`);
    console.log(`wrote ${VITALS_OUTPUT}: gzip ${sizes("", vitals).gzip} B`);
    const s = sizes(source, built);
    console.log(`wrote ${OUTPUT}: raw ${s.raw} B, min ${s.min} B, gzip ${s.gzip} B`);
    return 0;
  }
  if (command === "size") {
    let committed = "";
    try {
      committed = readFileSync(OUTPUT, "utf8");
    } catch {
      // reported below as out of date
    }
    const s = sizes(source, built);
    console.log(`raw  ${s.raw} bytes  (tracker.js)`);
    console.log(`min  ${s.min} bytes  (tracker.min.js)`);
    console.log(`gzip ${s.gzip} bytes  (gzip -9 of tracker.min.js; budget ${GZIP_BUDGET})`);
    let code = 0;
    if (s.gzip > GZIP_BUDGET) {
      console.error(`FAIL: gzip size ${s.gzip} > ${GZIP_BUDGET} bytes`);
      code = 1;
    }
    let committedVitals = "";
    try {
      committedVitals = readFileSync(VITALS_OUTPUT, "utf8");
    } catch {
      // reported below as out of date
    }
    console.log(`vitals gzip ${sizes("", vitals).gzip} bytes  (vitals.min.js, loaded only with data-vitals)`);
    if (committedVitals !== vitals) {
      console.error("FAIL: vitals.min.js is not the build of vitals.js; run `npm run build`");
      code = 1;
    }
    let committedReplay = "";
    try {
      committedReplay = readFileSync(REPLAY_OUTPUT, "utf8");
    } catch {
      // reported below as out of date
    }
    console.log(`replay gzip ${sizes("", replay).gzip} bytes  (replay.min.js, loaded only with data-replay)`);
    if (committedReplay !== replay) {
      console.error("FAIL: replay.min.js is not the build of replay.js; run `npm run build`");
      code = 1;
    }
    if (committed !== built) {
      console.error("FAIL: tracker.min.js is not the build of tracker.js; run `npm run build`");
      code = 1;
    }
    return code;
  }
  console.error("usage: node scripts/build-tracker.mjs build|size");
  return 2;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv[2]);
}
