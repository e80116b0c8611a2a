// npm records each package's "funding" links in package-lock.json, and no npm setting turns
// that off; the project wants a lockfile that names no host at all (registry URLs are
// already left out by .npmrc's omit-lockfile-registry-resolved). npm ci ignores "funding",
// so dropping it changes nothing about what gets installed.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const path = fileURLToPath(new URL("../package-lock.json", import.meta.url));
const text = readFileSync(path, "utf8");
const lock = JSON.parse(text);
for (const entry of Object.values(lock.packages ?? {})) delete entry.funding;
const out = JSON.stringify(lock, null, 2) + "\n";
if (/https?:/.test(out)) {
  console.error("package-lock.json still names a URL; look for the field holding it");
  process.exit(1);
}
if (out !== text) writeFileSync(path, out);
