// The page's types for the tools' JSON, generated from the JSON Schema of each tool that
// stepscope's registry writes (src/generated/schemas/<tool>.schema.json, made by
// `python -m stepscope.analysis.schemas`): src/generated/<tool>.ts, committed.
//
//   node scripts/generate-types.mjs           write them
//   node scripts/generate-types.mjs --check   exit 1 if writing would change a file
import { readdir, readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { generate } from "./types-from-schemas.mjs";

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const generated = path.join(root, "src", "generated");
const check = process.argv.includes("--check");

const outputs = await generate(path.join(generated, "schemas"));
const stale = [];
for (const [name, text] of outputs) {
  const target = path.join(generated, name);
  const current = await readFile(target, "utf8").catch(() => null);
  if (current === text) continue;
  stale.push(name);
  if (!check) await writeFile(target, text);
}
const expected = new Set(outputs.keys());
const extra = (await readdir(generated)).filter((name) => name.endsWith(".ts") && !expected.has(name));
if (check && (stale.length || extra.length)) {
  console.error(`web/src/generated is out of date (${[...stale, ...extra].join(", ")}): run make schemas`);
  process.exit(1);
}
if (!check) console.log(`${stale.length} of ${outputs.size} generated type files written`);
