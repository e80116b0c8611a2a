/**
 * A tool's options in the page: read from the address (`?tool=op_profile&top_n=5`), the
 * values a control offers, and what changed. The registry (/api/tools) says which options
 * a tool has; the page knows no tool's options by name.
 */

import type { OptionInfo, ToolInfo } from "../api";

/** The tool's options the address sets to something other than their defaults. */
export function optionsFromParams(tool: ToolInfo | undefined, params: URLSearchParams): Record<string, string> {
  const values: Record<string, string> = {};
  for (const option of tool?.options ?? []) {
    const value = params.get(option.name);
    if (value !== null && value !== String(option.default)) values[option.name] = value;
  }
  return values;
}

/**
 * The values a control for `option` offers, besides its default: the result field it
 * names (`choices_from`, e.g. op_profile's `devices`), then its fixed `choices`; none for
 * free values (numbers). Unique, in that order.
 */
export function optionChoices(option: OptionInfo, data: unknown): string[] {
  const listed = option.choices_from !== null && typeof data === "object" && data !== null ? (data as Record<string, unknown>)[option.choices_from] : undefined;
  const fromData = Array.isArray(listed) ? listed.filter((value): value is string => typeof value === "string") : [];
  // The control lists the default first, labelled as such: not a second time here (hlo_stats'
  // device defaults to "all", which is also one of its choices).
  return [...new Set([...fromData, ...option.choices])].filter((value) => value !== String(option.default));
}

/**
 * `values` with `name` set to `value`, or removed when that is the option's default; the
 * options it `resets` are removed too (their values held for its old value only).
 */
export function withOption(values: Record<string, string>, option: OptionInfo, value: string): Record<string, string> {
  const next = { ...values };
  for (const other of option.resets) delete next[other];
  if (value === String(option.default) || value === "") delete next[option.name];
  else next[option.name] = value;
  return next;
}

/** Whether two option sets are the same (order does not matter). */
export function sameOptions(a: Record<string, string> = {}, b: Record<string, string> = {}): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}
