/** Small pieces several tool pages share. */

import { el } from "../dom";
import { card } from "../components/metric";
import { findTable, renderTable, type TableOptions } from "../components/table";
import type { ApiColumn, CellValue } from "../api";
import { FIND_PARAM, traceViewerAddress } from "../state/url";
import type { PageContext } from "./types";

const IDLE = "IDLE";

/**
 * An op's name cell links to its events in the trace viewer (which opens searching for
 * the name, on the first match): for the `name` column (op tables) and `kernel_name`
 * (kernel stats); never for an IDLE row, which has no events.
 */
export function opInTraceViewer(context: PageContext, column: ApiColumn, row: CellValue[], columns: ApiColumn[]): string | null {
  if (column.key !== "name" && column.key !== "kernel_name") return null;
  const name = row[columns.indexOf(column)];
  if (typeof name !== "string" || name === "" || name === IDLE) return null;
  return traceViewerAddress(context.selection, { [FIND_PARAM]: name });
}

/** A card holding the named table from the tables API, or nothing when the tool has no such table. */
export function tableCard(context: PageContext, name: string, title: string, options: TableOptions = {}): HTMLElement | null {
  const table = findTable(context.tables, name);
  if (!table) return null;
  const cellHref = (column: ApiColumn, row: CellValue[], columns: ApiColumn[]): string | null => opInTraceViewer(context, column, row, columns);
  // The title goes on the table's toolbar line, not above it: one line more for rows.
  return card(null, renderTable(table, { selection: context.selection, cellHref, title, ...options }), { "data-card": name }, true);
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
