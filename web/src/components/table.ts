/**
 * A table from the tables API, sortable (click a header; again to reverse), searchable
 * (over its string columns), exportable (the server's CSV of the whole table: every row
 * and column, whatever is sorted, searched or hidden here) and with a column chooser.
 * Sort and search live in the address (state/table-url.ts): a change is a history entry,
 * back/forward puts it back. Hidden columns live in localStorage per table name (a layout
 * preference of this browser, like a column width, kept across runs and reloads, not a
 * property of the view a shared link shows). The markup follows the conventions browser
 * tests rely on: `table[data-table]`, `th[data-key][aria-sort]`, `td[data-key][data-value]`,
 * `input[data-search]`, `a[data-export]`, `details[data-columns]` with one
 * `input[data-column=KEY]` checkbox per column, and a `[data-shown]` note with the number
 * of rows on screen.
 */

import { csvUrl, type ApiColumn, type ApiTable, type CellValue, type Selection } from "../api";
import { el, replaceChildren, type Attrs } from "../dom";
import { formatCount, formatValue, rawAttr } from "../format";
import { setSource, sourceOf } from "../rawjson";
import { sameTableAddress, tableAddress, withTableAddress } from "../state/table-url";
import "./table.css";
import {
  columnShares,
  exactTwins,
  hiddenColumns,
  longTextColumns,
  shownNote,
  tableView,
  nextSort,
  toggleHidden,
  visibleIndexes,
  MAX_VISIBLE_ROWS,
  type SortState,
} from "./table-logic";

export interface TableOptions {
  /** Heading on the table's toolbar line; none when the card it sits in has one. */
  title?: string;
  /** More controls on the toolbar line, after the title (a page's switch for the table). */
  controls?: HTMLElement[];
  /**
   * The page's least-read columns of this table, hidden until the user shows them (column
   * chooser; a row's details show every column), so that the rest fit a 1280 px window.
   */
  leastRead?: readonly string[];
  /** For the export link; no link without it. */
  selection?: Selection;
  /** The table name the export link asks for, when the rows shown are a superset (idle rows added). */
  exportName?: string;
  searchable?: boolean;
  /** Extra attributes per body row (e.g. marking IDLE rows). */
  rowAttrs?: (row: CellValue[], columns: ApiColumn[]) => Attrs;
  /** A cell's text on hover, where it is not the cell's own (a shortened name's whole text), else null. */
  cellTitle?: (column: ApiColumn, row: CellValue[], columns: ApiColumn[]) => string | null;
  /** Where a cell links to (an op's events in the trace viewer), or null for plain text. */
  cellHref?: (column: ApiColumn, row: CellValue[], columns: ApiColumn[]) => string | null;
  limit?: number;
  /**
   * Sort and search kept outside the table, for a table that is rebuilt (the framework op
   * table when "include idle" changes) without losing what the user had set. Without it,
   * the table starts from the address.
   */
  state?: TableState;
}

export interface TableState {
  sort: SortState | null;
  filter: string;
}

/** The same table without some columns (a view choice, like "include idle"). */
export function withoutColumns(table: ApiTable, keys: string[]): ApiTable {
  const keep = table.columns.flatMap((column, index) => (keys.includes(column.key) ? [] : [index]));
  return {
    name: table.name,
    columns: keep.map((index) => table.columns[index]!),
    rows: table.rows.map((row) => {
      const copy = keep.map((index) => row[index] ?? null);
      keep.forEach((from, to) => {
        const text = sourceOf(row, from);
        if (text !== undefined) setSource(copy, to, text);
      });
      return copy;
    }),
  };
}

export function findTable(tables: ApiTable[], name: string): ApiTable | undefined {
  return tables.find((table) => table.name === name);
}

/**
 * A header without the unit the tool's label names ("Total time (us)"): cells carry their
 * own units ("12.35 ms"), so "(us)" over milliseconds would only mislead.
 */
export function displayLabel(label: string): string {
  return label.replace(/\s*\((us|ms|ps|bytes)\)$/, "");
}

/** The localStorage key of a table's hidden columns. */
export function hiddenStorageKey(table: string): string {
  return `stepscope.hidden-columns.${table}`;
}

function readStored(key: string): string | null {
  try {
    return window.localStorage.getItem(key);
  } catch {
    return null; // storage refused (private mode, file://): the defaults
  }
}

function writeStored(key: string, value: string): void {
  try {
    window.localStorage.setItem(key, value);
  } catch {
    // Not remembered; the choice still holds for this page.
  }
}

/** The table's sort and search as the current address gives them. */
export function addressState(table: string): TableState {
  return tableAddress(new URLSearchParams(location.search), table);
}

let measuring = false;

/**
 * Keeps `--topbar-height` (what table.css sizes a table's box by: the window below the
 * sticky top bar) equal to the bar's height, which grows when its controls wrap.
 */
function measureTopbar(): void {
  if (measuring) return;
  const bar = document.querySelector<HTMLElement>(".topbar");
  if (!bar || typeof ResizeObserver === "undefined") return;
  measuring = true;
  new ResizeObserver(() => document.documentElement.style.setProperty("--topbar-height", `${bar.offsetHeight}px`)).observe(bar);
}

/** Tables on the page that follow the address on back/forward. */
const live = new Set<{ root: HTMLElement; apply: () => void }>();
let listening = false;

function followHistory(entry: { root: HTMLElement; apply: () => void }): void {
  live.add(entry);
  if (listening) return;
  listening = true;
  window.addEventListener("popstate", () => {
    for (const table of [...live]) {
      if (table.root.isConnected) table.apply();
      else live.delete(table);
    }
  });
}

function cell(column: ApiColumn, row: CellValue[], index: number, long: boolean, href: string | null, hover: string | null): HTMLTableCellElement {
  const value = row[index] ?? null;
  const formatted = formatValue(column.key, value, column.kind);
  const text = href === null ? formatted : el("a", { href, class: "cell-link" }, formatted);
  return el(
    "td",
    {
      "data-key": column.key,
      "data-value": rawAttr(value, row, index),
      class: column.kind === "number" ? "num" : column.kind === "bool" ? "bool" : long ? "text long" : "text",
      // One line per row: a long name ends in an ellipsis; the whole of it on hover (and
      // in the row's details, on a click).
      title: hover ?? (column.kind === "string" ? formatted : null),
    },
    text,
  );
}

/**
 * The row opened under a clicked row: every column of the table (shown or hidden, but a
 * time once: not its exact `_ps` twin), its label and its whole value, wrapped over as
 * many lines as it needs.
 */
function detailsRow(row: CellValue[], columns: ApiColumn[], span: number): HTMLTableRowElement {
  const twins = exactTwins(columns);
  const items = columns.flatMap((column, index) =>
    twins.includes(column.key) ? [] : [el("dt", {}, displayLabel(column.label)), el("dd", { "data-key": column.key }, formatValue(column.key, row[index] ?? null, column.kind))],
  );
  return el("tr", { class: "row-details", "data-row-details": "" }, el("td", { colspan: span }, el("dl", {}, items)));
}

export function renderTable(table: ApiTable, options: TableOptions = {}): HTMLElement {
  const { columns, rows, name } = table;
  const state: TableState = options.state ?? addressState(name);
  const limit = options.limit ?? MAX_VISIBLE_ROWS;
  const storageKey = hiddenStorageKey(name);
  let hidden = hiddenColumns(readStored(storageKey), columns, options.leastRead);
  const long = new Set(longTextColumns(columns, rows));

  const headRow = el("tr");
  const tbody = el("tbody");
  const note = el("p", { class: "table-note" });
  const headers = columns.map((column) =>
    el(
      "th",
      {
        "data-key": column.key,
        "data-kind": column.kind,
        scope: "col",
        tabindex: 0,
        class: column.kind === "number" ? "num" : long.has(column.key) ? "text long" : "text",
        title: `${column.label}: click to sort`,
        onclick: () => sortBy(column),
        onkeydown: (event: Event) => {
          const key = (event as KeyboardEvent).key;
          if (key === "Enter" || key === " ") {
            event.preventDefault();
            sortBy(column);
          }
        },
      },
      displayLabel(column.label),
    ),
  );

  /** Puts the table's state into the address: a new entry, or in place while a search is typed. */
  function writeAddress(mode: "push" | "replace"): void {
    const params = withTableAddress(new URLSearchParams(location.search), name, state);
    const query = params.toString();
    const url = `${location.pathname}${query ? `?${query}` : ""}`;
    if (url === `${location.pathname}${location.search}`) return;
    if (mode === "push") history.pushState(history.state, "", url);
    else history.replaceState(history.state, "", url);
  }

  function sortBy(column: ApiColumn): void {
    state.sort = nextSort(state.sort, column.key);
    markSorted();
    update();
    writeAddress("push");
  }

  function markSorted(): void {
    for (const th of headers) {
      if (state.sort && th.dataset.key === state.sort.key) th.setAttribute("aria-sort", state.sort.direction);
      else th.removeAttribute("aria-sort");
    }
  }

  function update(): void {
    const shown = visibleIndexes(columns, hidden);
    replaceChildren(
      headRow,
      shown.map((index) => headers[index]!),
    );
    const view = tableView(rows, columns, state.filter, state.sort, limit);
    const shares = columnShares(shown.map((index) => columns[index]!.key).filter((key) => long.has(key)));
    for (const index of shown) {
      // A header's width is its column's: the long columns' shares of the width left.
      const share = shares.get(columns[index]!.key);
      headers[index]!.style.width = share === undefined ? "" : `${share}%`;
    }
    const body = view.rows.map((row) =>
      el(
        "tr",
        {
          ...(options.rowAttrs?.(row, columns) ?? {}),
          "aria-expanded": "false",
          onclick: (event: Event) => {
            if ((event.target as Element).closest("a")) return; // a link goes where it says
            toggleDetails(event.currentTarget as HTMLTableRowElement, row);
          },
        },
        shown.map((index) => {
          const column = columns[index]!;
          return cell(column, row, index, long.has(column.key), options.cellHref?.(column, row, columns) ?? null, options.cellTitle?.(column, row, columns) ?? null);
        }),
      ),
    );
    if (body.length === 0) {
      body.push(el("tr", { class: "empty" }, el("td", { colspan: shown.length }, state.filter ? "No matching rows" : "No rows")));
    }
    replaceChildren(tbody, body);
    note.textContent = shownNote(view, formatCount);
    note.setAttribute("data-shown", String(view.rows.length));
    note.setAttribute("data-matching", String(view.matching));
    note.setAttribute("data-total", String(view.total));
    note.setAttribute("data-shown-table", name);
  }

  /** Opens (or closes) the whole row under a clicked row. */
  function toggleDetails(tr: HTMLTableRowElement, row: CellValue[]): void {
    const next = tr.nextElementSibling;
    if (next instanceof HTMLTableRowElement && next.classList.contains("row-details")) {
      next.remove();
      tr.setAttribute("aria-expanded", "false");
      return;
    }
    tr.after(detailsRow(row, columns, tr.cells.length));
    tr.setAttribute("aria-expanded", "true");
  }

  const search =
    options.searchable === false
      ? null
      : el("input", {
          type: "search",
          "data-search": name,
          placeholder: "Search…",
          value: state.filter || null,
          "aria-label": `Search ${options.title ?? name}`,
          oninput: (event: Event) => {
            // A search begun is a history entry; the keys typed after it edit that entry.
            const before = addressState(name).filter;
            state.filter = (event.target as HTMLInputElement).value;
            update();
            writeAddress(before.trim() ? "replace" : "push");
          },
        });
  const exportLink = options.selection
    ? el(
        "a",
        {
          "data-export": options.exportName ?? name,
          href: csvUrl(options.selection, options.exportName ?? name),
          download: `${options.exportName ?? name}.csv`,
          class: "button-link",
        },
        "Export as CSV",
      )
    : null;

  const boxes = columns.map((column) =>
    el("input", {
      type: "checkbox",
      "data-column": column.key,
      onchange: (event: Event) => {
        const box = event.target as HTMLInputElement;
        hidden = toggleHidden(columns, hidden, column.key, box.checked);
        writeStored(storageKey, JSON.stringify(hidden));
        markBoxes();
        update();
      },
    }),
  );
  function markBoxes(): void {
    const shown = visibleIndexes(columns, hidden);
    boxes.forEach((box, index) => {
      box.checked = shown.includes(index);
      // The last column shown cannot go.
      box.disabled = box.checked && shown.length === 1;
    });
  }
  const chooser = el("details", { class: "column-chooser", "data-columns": name }, [
    el("summary", { class: "button-link", title: "Choose the columns shown" }, "Columns"),
    el(
      "div",
      {
        class: "column-menu",
        role: "group",
        "aria-label": `Columns of ${options.title ?? name}`,
      },
      columns.map((column, index) => el("label", {}, [boxes[index]!, ` ${displayLabel(column.label)}`])),
    ),
  ]);

  markSorted();
  markBoxes();
  update();
  measureTopbar();
  const root = el("section", { class: "table-block", "data-table-block": name }, [
    el("div", { class: "table-toolbar" }, [
      options.title ? el("h3", {}, options.title) : null,
      ...(options.controls ?? []),
      el("span", { class: "spacer" }),
      search,
      chooser,
      exportLink,
    ]),
    el("div", { class: "table-scroll" }, el("table", { "data-table": name }, [el("thead", {}, headRow), tbody])),
    note,
  ]);
  followHistory({
    root,
    apply: () => {
      const wanted = addressState(name);
      if (sameTableAddress(wanted, state)) return;
      state.sort = wanted.sort;
      state.filter = wanted.filter;
      if (search) search.value = wanted.filter;
      markSorted();
      update();
    },
  });
  return root;
}
