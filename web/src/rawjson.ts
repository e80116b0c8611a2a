/**
 * The JSON text of numbers, for `data-value`. JavaScript reads "43458933.0" as 43458933
 * and would print it back without the ".0" (and "1e-05" as "0.00001"), so a script that
 * compares `data-value` with the tool JSON as Python prints it would see a difference
 * that isn't one. JSON.parse's reviver gets each value's source text (Chromium 114+,
 * Firefox 135+); where the text differs from what String() gives, it is kept here, keyed
 * by the object holding the value and the key under it. Where the browser gives no
 * source text nothing is kept and `data-value` is String(value), still the same number.
 */

const sources = new WeakMap<object, Map<string, string>>();

interface ReviverContext {
  source?: string;
}

export function reviver(this: unknown, key: string, value: unknown, context?: ReviverContext): unknown {
  if (typeof value === "number" && this !== null && typeof this === "object") {
    const text = context?.source;
    if (text !== undefined && text !== String(value)) setSource(this, key, text);
  }
  return value;
}

/** JSON.parse keeping the source text of numbers JavaScript would write differently. */
export function parseJson(text: string): unknown {
  return JSON.parse(text, reviver);
}

/** The JSON text of `holder[key]`, when it differs from String(value). */
export function sourceOf(holder: object | null | undefined, key: string | number): string | undefined {
  return holder ? sources.get(holder)?.get(String(key)) : undefined;
}

/** Carries a number's text over to a copy (a table row without some columns). */
export function setSource(holder: object, key: string | number, text: string): void {
  let map = sources.get(holder);
  if (!map) {
    map = new Map();
    sources.set(holder, map);
  }
  map.set(String(key), text);
}

/**
 * `holder[key]` as JSON text, every number in it as the JSON wrote it: a uint64 id such as
 * XLA's program_id 12190760917235803885 is past 2^53, where a JavaScript number keeps only
 * 12190760917235804000. Strings come back quoted, as JSON.stringify writes them.
 */
export function exactText(holder: object, key: string | number): string {
  const value: unknown = (holder as Record<string | number, unknown>)[key];
  if (typeof value === "number") return sourceOf(holder, key) ?? JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((_, index) => exactText(value, index)).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.keys(value).map((name) => `${JSON.stringify(name)}:${exactText(value, name)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
