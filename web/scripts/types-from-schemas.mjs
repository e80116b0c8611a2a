// One TypeScript module per tool schema: <tool>.schema.json -> <tool>.ts (json-schema-to-typescript).
import { readdir } from "node:fs/promises";
import path from "node:path";
import { compileFromFile } from "json-schema-to-typescript";

const SUFFIX = ".schema.json";

export async function generate(schemas) {
  const names = (await readdir(schemas)).filter((name) => name.endsWith(SUFFIX)).sort();
  const outputs = new Map();
  for (const name of names) {
    const tool = name.slice(0, -SUFFIX.length);
    const banner =
      `/* Generated from schemas/${name} by web/scripts/generate-types.mjs: do not edit. */\n` +
      "/* A JSON form of stepscope.analysis (its registry and its tools); regenerate with `make schemas`. */";
    const text = await compileFromFile(path.join(schemas, name), {
      bannerComment: banner,
      additionalProperties: false,
      style: { printWidth: 120, singleQuote: false },
    });
    outputs.set(`${tool}.ts`, text);
  }
  return outputs;
}
