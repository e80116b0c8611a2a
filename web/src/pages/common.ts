/** Small pieces several tool pages share. */

import { el } from "../dom";
import { card } from "../components/metric";
import { findTable, renderTable, type TableOptions } from "../components/table";
import type { PageContext } from "./types";

/** A card holding the named table from the tables API, or nothing when the tool has no such table. */
export function tableCard(context: PageContext, name: string, title: string, options: TableOptions = {}): HTMLElement | null {
  const table = findTable(context.tables, name);
  if (!table) return null;
  return card(title, renderTable(table, { selection: context.selection, ...options }), { "data-card": name }, true);
}

/** The grid every page lays its cards out in. */
export function grid(root: HTMLElement): HTMLElement {
  const container = el("div", { class: "grid" });
  root.appendChild(container);
  return container;
}

/** Adds the non-null children to `parent`, returning it (for chaining page sections). */
export function add(parent: HTMLElement, ...children: (HTMLElement | null | undefined | false)[]): HTMLElement {
  for (const child of children) if (child) parent.appendChild(child);
  return parent;
}

/** Two cards sharing a full row. */
export function twoUp(left: HTMLElement | null, right: HTMLElement | null): HTMLElement {
  return add(el("div", { class: "two-up" }), left, right);
}
