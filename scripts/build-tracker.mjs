// Build and size check of the browser tracker.
//   node scripts/build-tracker.mjs build  writes static/sessions_app/tracker.min.js
//   node scripts/build-tracker.mjs size   prints raw/min/gzip bytes; exits 1 when gzip is
//                                         over budget or tracker.min.js is not up to date
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
  if (command === "build") {
    writeFileSync(OUTPUT, built);
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
