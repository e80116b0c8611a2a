/**
 * Number formatting. The tools give raw numbers (microseconds, percentages, bytes, counts)
 * and the page shows them with units; the raw value always stays in `data-value` beside the
 * text, so every formatted string here must be a pure function of that value and its key.
 *
 * Formatting is done by hand rather than with Intl/toLocaleString so the output does not
 * depend on the browser's locale (tests and screenshots must read the same everywhere).
 */

import { sourceOf } from "./rawjson";

export type Raw = number | string | boolean | null | undefined;

/** What a value means, which decides how it is written. */
export type Kind = "time_us" | "time_ms" | "time_ps" | "percent" | "ratio" | "bytes" | "count" | "number" | "string" | "bool";

export const MISSING = "—";

/** "1234567" -> "1,234,567"; the sign and any fraction are kept as they are. */
export function groupThousands(text: string): string {
  const match = /^(-?)(\d+)(\.\d+)?(.*)$/.exec(text);
  if (!match) return text;
  const [, sign = "", whole = "", fraction = "", rest = ""] = match;
  return sign + whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",") + fraction + rest;
}

function fixed(value: number, digits: number): string {
  // toFixed turns -0.001 into "-0.00"; a minus sign on a zero only confuses.
  const text = value.toFixed(digits);
  return /^-0(\.0*)?$/.test(text) ? text.slice(1) : text;
}

function usable(value: Raw): value is number {
  return typeof value === "number" && Number.isFinite(value);
}

const TIME_UNITS = [
  ["s", 1e9],
  ["ms", 1e6],
  ["us", 1e3],
  ["ns", 1],
] as const;

/**
 * A duration given in nanoseconds, in the unit that fits its size (ns / us / ms / s) with
 * two decimals: "0.40 ns", "999.90 us", "1.00 ms", "59.00 s", "-1.50 ms". A value that
 * would round up to 1000 of a unit is written in the next one ("1.00 ms", never
 * "1000.00 us"); seconds are the largest unit and get thousands separators. Zero is
 * written in `zeroUnit` (the unit of the key it came from), a non-zero value too small
 * for two decimals of a nanosecond with two significant digits.
 */
export function formatDurationNs(ns: number, zeroUnit: string = "us"): string {
  if (!Number.isFinite(ns)) return MISSING;
  if (ns === 0) return `0 ${zeroUnit}`;
  const size = Math.abs(ns);
  for (const [unit, scale] of TIME_UNITS) {
    if (size < scale && unit !== "ns") continue;
    const text = fixed(ns / scale, 2);
    if (Math.abs(Number(text)) >= 1000 && unit !== "s") {
      // Rounds up to the next unit's 1.00.
      const bigger = TIME_UNITS[TIME_UNITS.findIndex(([name]) => name === unit) - 1]!;
      return `${fixed(ns / bigger[1], 2)} ${bigger[0]}`;
    }
    if (unit === "ns" && size < 0.005) return `${ns.toPrecision(2)} ns`;
    return `${groupThousands(text)} ${unit}`;
  }
  return MISSING;
}

/** Microseconds (the tools' unit), written in a fitting unit: "850.20 us", "12.35 ms", "98.15 s". */
export function formatTimeUs(value: Raw): string {
  if (!usable(value)) return MISSING;
  return formatDurationNs(value * 1e3, "us");
}

/** Milliseconds (the input pipeline's op table is in ms). */
export function formatTimeMs(value: Raw): string {
  if (!usable(value)) return MISSING;
  return formatDurationNs(value * 1e6, "ms");
}

/** Picoseconds (exact trace figures, `*_ps`). */
export function formatTimePs(value: Raw): string {
  if (!usable(value)) return MISSING;
  return formatDurationNs(value / 1e3, "ns");
}

/** A percentage (0..100) with one decimal. */
export function formatPercent(value: Raw): string {
  if (!usable(value)) return MISSING;
  return `${fixed(value, 1)}%`;
}

/** A fraction (0..1, FLOPS utilisation) shown as a percentage. */
export function formatRatio(value: Raw): string {
  if (!usable(value)) return MISSING;
  return formatPercent(value * 100);
}

const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"] as const;

/** Bytes in binary units: "512 B", "55.13 MiB", "2.60 GiB". */
export function formatBytes(value: Raw): string {
  if (!usable(value)) return MISSING;
  let scaled = value;
  let unit = 0;
  while (Math.abs(scaled) >= 1024 && unit < BYTE_UNITS.length - 1) {
    scaled /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${fixed(scaled, 0)} B` : `${fixed(scaled, 2)} ${BYTE_UNITS[unit]}`;
}

/** A count: whole number with thousands separators. */
export function formatCount(value: Raw): string {
  if (!usable(value)) return MISSING;
  return groupThousands(fixed(Math.round(value), 0));
}

/** Any other number: integers grouped, fractions with 2 decimals (3 significant digits when tiny). */
export function formatNumber(value: Raw): string {
  if (!usable(value)) return MISSING;
  if (Number.isInteger(value)) return groupThousands(String(value));
  if (value !== 0 && Math.abs(value) < 0.01) return value.toPrecision(3);
  return groupThousands(fixed(value, 2));
}

const COUNT_KEYS = new Set([
  "occurrences",
  "count",
  "rank",
  "events",
  "allocations",
  "registers_per_thread",
  "step",
  "peak_step",
  "folded",
  "step_count",
  "device_count",
  "env_device_count",
  "env_hosts",
  "hosts",
  "flops",
  "device_flops",
  "flops_device_flops",
]);

/**
 * The kind a key names, following the tools' naming: `*_us` are microseconds, `*_ms`
 * milliseconds, `*_ps` picoseconds (all three written in a fitting unit), anything with
 * "percent"/"_pct" a percentage, `*bytes*` a size. `kind` is the
 * tables API's column kind, which settles strings and booleans whatever the key.
 */
export function kindOfKey(key: string, kind?: string): Kind {
  if (kind === "string") return "string";
  if (kind === "bool") return "bool";
  if (key.endsWith("_us")) return "time_us";
  if (key.endsWith("_ms")) return "time_ms";
  if (key.endsWith("_ps")) return "time_ps";
  if (key === "flops_utilization") return "ratio";
  if (key.includes("percent") || key.endsWith("_pct")) return "percent";
  if (key === "bytes" || key.endsWith("_bytes") || key === "bytes_accessed") return "bytes";
  if (COUNT_KEYS.has(key)) return "count";
  return "number";
}

/** Writes a value of the given kind. Strings pass through; null/NaN become a dash. */
export function formatAs(kind: Kind, value: Raw): string {
  if (value === null || value === undefined) return MISSING;
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (typeof value === "string") return value === "" ? MISSING : value;
  switch (kind) {
    case "time_us":
      return formatTimeUs(value);
    case "time_ms":
      return formatTimeMs(value);
    case "time_ps":
      return formatTimePs(value);
    case "percent":
      return formatPercent(value);
    case "ratio":
      return formatRatio(value);
    case "bytes":
      return formatBytes(value);
    case "count":
      return formatCount(value);
    case "string":
      return String(value);
    default:
      return formatNumber(value);
  }
}

/** The text shown for `value` under `key` (a metric key or a table column key). */
export function formatValue(key: string, value: Raw, kind?: string): string {
  return formatAs(kindOfKey(key, kind), value);
}

/**
 * What goes in `data-value`: the JSON form of the raw value ("null", "true", a number as
 * the JSON wrote it) or the string itself. `holder` and `key` say where the value was
 * read from, which finds the number's JSON text ("43458933.0"; see rawjson.ts).
 */
export function rawAttr(value: Raw, holder?: object | null, key?: string | number): string {
  if (typeof value === "number" && key !== undefined) {
    const text = sourceOf(holder, key);
    if (text !== undefined) return text;
  }
  if (value === null || value === undefined) return "null";
  if (typeof value === "number" && !Number.isFinite(value)) return "null";
  return String(value);
}

/** "device_compute_us" -> "Device compute". */
export function humanize(key: string): string {
  const words = key.replace(/_(us|ps|ms)$/, "").replace(/_/g, " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}
