// The tracker's own `redact` (static/sessions_app/tracker.js) over cases read from stdin:
// [[url, names], ...] -> [redacted, ...] on stdout (tests/ingest/test_redact.py).
import { readFileSync } from "node:fs";
import { helpers } from "../tracker/harness.mjs";

const T = helpers();
const cases = JSON.parse(readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(cases.map(([url, names]) => T.redact(url, names.map((n) => n.toLowerCase())))));
