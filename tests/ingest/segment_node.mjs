// Drives @segment/analytics-node (from npm) for tests/ingest/test_sdks.py:
//   node segment_node.mjs <host> <writeKey> <calls.json>
// calls.json: [["track", {userId, event, ...}], ...], made in order, then flushed.
import { readFileSync } from "node:fs";
import { Analytics } from "@segment/analytics-node";

const [host, writeKey, file] = process.argv.slice(2);
const analytics = new Analytics({ writeKey, host, maxRetries: 1 });
const failures = [];
analytics.on("error", (err) => failures.push(String(err && (err.reason || err.message || err))));
for (const [method, params] of JSON.parse(readFileSync(file, "utf8"))) {
  analytics[method](params);
}
await analytics.closeAndFlush({ timeout: 20000 });
if (failures.length) {
  console.error(failures.join("\n"));
  process.exit(1);
}
