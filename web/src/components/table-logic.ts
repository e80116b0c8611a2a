/**
 * Sorting, filtering and windowing of table rows, kept apart from the DOM so it can be
 * unit-tested. Sorting and filtering always run over every row; only the rendering is
 * capped (see MAX_VISIBLE_ROWS), so a search finds rows that were not on screen.
 */

import type { ApiColumn, CellValue } from "../api";

export type SortDirection = "ascending" | "descending";

export interface SortState {
  key: string;
  direction: SortDirection;
}

/** Big tables (thousands of kernels) would make the page sluggish; more is one search away. */
export const MAX_VISIBLE_ROWS = 500;

/**
 * Compares two cells for an ascending sort: numbers numerically, strings by code point
 * ignoring case (then with case, so the order is total; not localeCompare, whose order of
 * punctuation such as "_" and ":" depends on the browser's locale), booleans false < true.
 * Nulls are "no value" and go last whichever way the column is sorted (see sortRows).
 */
export function compareCells(a: CellValue, b: CellValue): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "boolean" && typeof b === "boolean") return Number(a) - Number(b);
  const x = String(a);
  const y = String(b);
  const fx = x.toLowerCase();
  const fy = y.toLowerCase();
  if (fx !== fy) return fx < fy ? -1 : 1;
  return x < y ? -1 : x > y ? 1 : 0;
}

function missing(value: CellValue | undefined): boolean {
  return value === null || value === undefined || (typeof value === "number" && Number.isNaN(value));
}

/**
 * Rows sorted by the column at `index`; a stable sort, so equal rows keep the tool's own
 * order (its ranking). Nulls always sort last.
 */
export function sortRows(rows: CellValue[][], index: number, direction: SortDirection): CellValue[][] {
  const sign = direction === "ascending" ? 1 : -1;
  return rows
    .map((row, position) => ({ row, position }))
    .sort((p, q) => {
      const a = p.row[index] ?? null;
      const b = q.row[index] ?? null;
      const ma = missing(a);
      const mb = missing(b);
      if (ma || mb) return ma && mb ? p.position - q.position : ma ? 1 : -1;
      return sign * compareCells(a, b) || p.position - q.position;
    })
    .map((entry) => entry.row);
}

/** Rows whose string columns contain `text`, ignoring case; all rows for blank text. */
export function filterRows(rows: CellValue[][], columns: ApiColumn[], text: string): CellValue[][] {
  const needle = text.trim().toLowerCase();
  if (!needle) return rows;
  const stringColumns = columns.flatMap((column, index) => (column.kind === "string" ? [index] : []));
  return rows.filter((row) =>
    stringColumns.some((index) => {
      const cell = row[index];
      return typeof cell === "string" && cell.toLowerCase().includes(needle);
    }),
  );
}

/**
 * The state after a click on a header: a new column sorts ascending, the same column
 * flips. (The tool's own order, biggest first, is what a table opens with.)
 */
export function nextSort(current: SortState | null, key: string): SortState {
  if (current && current.key === key) {
    return {
      key,
      direction: current.direction === "ascending" ? "descending" : "ascending",
    };
  }
  return { key, direction: "ascending" };
}

export interface View {
  rows: CellValue[][];
  /** Rows that match the filter, before the visible cap. */
  matching: number;
  total: number;
}

/** Filter, then sort, then cap: what the table shows. */
export function tableView(
  rows: CellValue[][],
  columns: ApiColumn[],
  filter: string,
  sort: SortState | null,
  limit: number = MAX_VISIBLE_ROWS,
): View {
  let result = filterRows(rows, columns, filter);
  const index = sort ? columns.findIndex((column) => column.key === sort.key) : -1;
  if (sort && index >= 0) result = sortRows(result, index, sort.direction);
  return {
    rows: result.slice(0, limit),
    matching: result.length,
    total: rows.length,
  };
}

/** "showing 500 of 3,120 rows" (and "(12,000 in all)" when a filter is on). */
export function shownNote(view: View, group: (n: number) => string): string {
  const base = `showing ${group(view.rows.length)} of ${group(view.matching)} rows`;
  return view.matching === view.total ? base : `${base} (${group(view.total)} in all)`;
}

// ---------------------------------------------------------------- column choice

/**
 * Columns that say again, at length, what a row's name already says: an HLO op's whole
 * text (`%copy-done.2 = f32[...] copy-done(...)`) and its program's id (in the program's
 * name too). They start hidden, so the numbers fit the screen; a row's details (a click)
 * and the column chooser show them.
 */
export const DETAIL_COLUMNS: readonly string[] = ["expression", "program_id"];

/**
 * Columns hidden when the user has chosen nothing for a table: an exact `X_ps` column
 * whose `X_us` twin is shown (the same time, to the picosecond, for export and tests),
 * the detail columns above, and the page's least-read columns of that table (`leastRead`:
 * what the shown columns already say, so that the rest fit a 1280 px window).
 */
export function defaultHidden(columns: ApiColumn[], leastRead: readonly string[] = []): string[] {
  const twins = exactTwins(columns);
  const hide = (key: string): boolean => twins.includes(key) || DETAIL_COLUMNS.includes(key) || leastRead.includes(key);
  return columns.flatMap((column) => (hide(column.key) ? [column.key] : []));
}

/** The exact `X_ps` columns whose `X_us` twin the table has (the same time, shown once). */
export function exactTwins(columns: ApiColumn[]): string[] {
  const keys = new Set(columns.map((column) => column.key));
  return columns.flatMap((column) => (column.key.endsWith("_ps") && keys.has(`${column.key.slice(0, -3)}_us`) ? [column.key] : []));
}

/**
 * The hidden columns from what was stored for the table (a JSON list of keys, or null when
 * the user never chose: the defaults, with the page's `leastRead`): keys the table lacks
 * are dropped, anything unreadable counts as no choice.
 */
export function hiddenColumns(stored: string | null, columns: ApiColumn[], leastRead: readonly string[] = []): string[] {
  if (stored === null) return defaultHidden(columns, leastRead);
  let parsed: unknown;
  try {
    parsed = JSON.parse(stored);
  } catch {
    return defaultHidden(columns, leastRead);
  }
  if (!Array.isArray(parsed)) return defaultHidden(columns, leastRead);
  return columns.flatMap((column) => (parsed.includes(column.key) ? [column.key] : []));
}

/** Indexes of the columns shown; never none (with every column hidden, the first shows). */
export function visibleIndexes(columns: ApiColumn[], hidden: string[]): number[] {
  const shown = columns.flatMap((column, index) => (hidden.includes(column.key) ? [] : [index]));
  return shown.length > 0 || columns.length === 0 ? shown : [0];
}

/** The hidden list after a checkbox changed; the last shown column cannot be hidden. */
export function toggleHidden(columns: ApiColumn[], hidden: string[], key: string, show: boolean): string[] {
  const next = show ? hidden.filter((other) => other !== key) : hidden.includes(key) ? hidden : [...hidden, key];
  return columns.length > 0 && columns.every((column) => next.includes(column.key)) ? hidden : next;
}

/**
 * String columns whose cells run long (kernel and op names): these take the width the
 * other columns leave and cut their text with an ellipsis, instead of widening the table
 * or wrapping to many lines; short strings ("256,1,1") are shown whole.
 */
export function longTextColumns(columns: ApiColumn[], rows: CellValue[][], longer = 24): string[] {
  return columns.flatMap((column, index) =>
    column.kind === "string" && rows.some((row) => typeof row[index] === "string" && row[index].length > longer) ? [column.key] : [],
  );
}

/**
 * The percentage of the width left by the other columns that each long column takes: the
 * first (the row's name: a kernel, an op) twice what each later one (its framework op)
 * gets, so the name shows the most.
 */
export function columnShares(longKeys: string[]): Map<string, number> {
  const weights = longKeys.map((_, position) => (position === 0 ? 2 : 1));
  const sum = weights.reduce((a, b) => a + b, 0);
  return new Map(longKeys.map((key, position) => [key, Math.round((1000 * weights[position]!) / sum) / 10]));
}
