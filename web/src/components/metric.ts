/**
 * Cards and the scalar metrics inside them. Each metric carries its raw value in
 * `data-value` beside the formatted text (`data-metric` names it), so a test or a script
 * scraping the page can check the number without parsing "12.35 ms".
 */

import { el, type Child } from "../dom";
import { formatValue, rawAttr, type Raw } from "../format";

/**
 * A value read from the tool JSON, with where it was read from, so `data-value` can give
 * the number exactly as the JSON wrote it (see rawjson.ts).
 */
export interface FieldRef {
  holder: object;
  field: string;
}

export function at<T extends object>(holder: T, field: keyof T & string): FieldRef {
  return { holder, field };
}

function isRef(value: Raw | FieldRef): value is FieldRef {
  return typeof value === "object" && value !== null;
}

/** Just the value element, for places that lay out their own labels. */
export function metricValue(key: string, source: Raw | FieldRef, tag: "div" | "span" = "div"): HTMLElement {
  const value = isRef(source) ? ((source.holder as Record<string, unknown>)[source.field] as Raw) : source;
  const raw = isRef(source) ? rawAttr(value, source.holder, source.field) : rawAttr(value);
  return el(tag, { class: typeof value === "string" ? "metric-value text" : "metric-value", "data-metric": key, "data-value": raw }, formatValue(key, value));
}

/** One labelled value. `key` decides the formatting (see format.kindOfKey). */
export function metric(key: string, value: Raw | FieldRef, label: string, hint?: string): HTMLElement {
  return el("div", { class: "metric", title: hint ?? null }, [el("div", { class: "metric-label" }, label), metricValue(key, value)]);
}

/** A titled card; `wide` cards span the whole grid row (charts, tables). */
export function card(title: string | null, children: Child | Child[], attrs: Record<string, string> = {}, wide = false): HTMLElement {
  const cls = ["card", wide ? "wide" : "", attrs.class ?? ""].filter(Boolean).join(" ");
  return el("section", { ...attrs, class: cls }, [title ? el("h2", {}, title) : null, ...(Array.isArray(children) ? children : [children])]);
}

/** A row of metrics inside a card. */
export function metrics(items: HTMLElement[]): HTMLElement {
  return el("div", { class: "metrics" }, items);
}

/** A plain explanatory line (notes the tools give, warnings). */
export function note(text: string, kind: "note" | "warning" = "note", attrs: Record<string, string> = {}): HTMLElement {
  return el("p", { ...attrs, class: kind, role: kind === "warning" ? "status" : null }, text);
}
