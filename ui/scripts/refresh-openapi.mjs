// Copies the live OpenAPI document of a running service into ui/openapi.json (sorted, indented),
// the copy the typed client is generated from. A Rust test fails while the two differ.
// Usage: npm run refresh-openapi [-- http://127.0.0.1:3100]
// Then regenerates the client's types from it (gen-api.mjs). Both happen in this one script:
// npm appends `-- <url>` to the end of a script's command, so a `... && npm run gen:api` after
// it would have taken the URL instead of this script.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const base = process.argv[2] ?? process.env.CONDUIT_URL ?? 'http://127.0.0.1:3100';
const sortKeys = (v) =>
  Array.isArray(v) ? v.map(sortKeys)
  : v && typeof v === 'object' ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys(v[k])]))
  : v;
const res = await fetch(`${base}/api/openapi.json`);
if (!res.ok) throw new Error(`GET ${base}/api/openapi.json: ${res.status}`);
const doc = sortKeys(await res.json());
const out = new URL('../openapi.json', import.meta.url);
const text = JSON.stringify(doc, null, 2) + '\n';
// Written only when it differs: build.rs watches this file, and rewriting the same text would
// rebuild the dashboard and the service for nothing.
if (existsSync(out) && readFileSync(out, 'utf8') === text) {
  console.log(`ui/openapi.json already matches ${base}`);
} else {
  writeFileSync(out, text);
  console.log(`ui/openapi.json refreshed from ${base}`);
}
await import('./gen-api.mjs');
