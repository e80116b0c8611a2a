/**
 * A table from the tables API, sortable (click a header; again to reverse), searchable
 * (over its string columns) and exportable (the server's CSV of the same table). The
 * markup follows the conventions browser tests rely on: `table[data-table]`,
 * `th[data-key][aria-sort]`, `td[data-key][data-value]`, `input[data-search]`,
 * `a[data-export]` and a `[data-shown]` note with the number of rows on screen.
 */

import { csvUrl, type ApiColumn, type ApiTable, type CellValue, type Selection } from "../api";
import { el, replaceChildren, type Attrs } from "../dom";
import { formatCount, formatValue, rawAttr } from "../format";
import { setSource, sourceOf } from "../rawjson";
import { shownNote, tableView, nextSort, MAX_VISIBLE_ROWS, type SortState } from "./table-logic";

export interface TableOptions {
  /** Heading over the table; none when the card it sits in has one. */
  title?: string;
  /** For the export link; no link without it. */
  selection?: Selection;
  /** The table name the export link asks for, when the rows shown are a superset (idle rows added). */
  exportName?: string;
  searchable?: boolean;
  /** Extra attributes per body row (e.g. marking IDLE rows). */
  rowAttrs?: (row: CellValue[], columns: ApiColumn[]) => Attrs;
  limit?: number;
  /**
   * Sort and search kept outside the table, for a table that is rebuilt (the framework op
   * table when "include idle" changes) without losing what the user had set.
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

function cell(column: ApiColumn, row: CellValue[], index: number): HTMLTableCellElement {
  const value = row[index] ?? null;
  const text = formatValue(column.key, value, column.kind);
  return el(
    "td",
    {
      "data-key": column.key,
      "data-value": rawAttr(value, row, index),
      class: column.kind === "number" ? "num" : column.kind === "bool" ? "bool" : "text",
      // Long kernel names are cut by CSS; the whole name stays one hover away.
      title: column.kind === "string" && text.length > 40 ? text : null,
    },
    text,
  );
}

export function renderTable(table: ApiTable, options: TableOptions = {}): HTMLElement {
  const { columns, rows, name } = table;
  const state: TableState = options.state ?? { sort: null, filter: "" };
  const limit = options.limit ?? MAX_VISIBLE_ROWS;

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
        class: column.kind === "number" ? "num" : "text",
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

  function sortBy(column: ApiColumn): void {
    state.sort = nextSort(state.sort, column.key);
    markSorted();
    update();
  }

  function markSorted(): void {
    for (const th of headers) {
      if (state.sort && th.dataset.key === state.sort.key) th.setAttribute("aria-sort", state.sort.direction);
      else th.removeAttribute("aria-sort");
    }
  }

  function update(): void {
    const view = tableView(rows, columns, state.filter, state.sort, limit);
    const body = view.rows.map((row) =>
      el(
        "tr",
        options.rowAttrs?.(row, columns) ?? {},
        columns.map((column, index) => cell(column, row, index)),
      ),
    );
    if (body.length === 0) {
      body.push(el("tr", { class: "empty" }, el("td", { colspan: columns.length }, state.filter ? "No matching rows" : "No rows")));
    }
    replaceChildren(tbody, body);
    note.textContent = shownNote(view, formatCount);
    note.setAttribute("data-shown", String(view.rows.length));
    note.setAttribute("data-matching", String(view.matching));
    note.setAttribute("data-total", String(view.total));
    note.setAttribute("data-shown-table", name);
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
            state.filter = (event.target as HTMLInputElement).value;
            update();
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

  markSorted();
  update();
  return el("section", { class: "table-block", "data-table-block": name }, [
    el("div", { class: "table-toolbar" }, [
      options.title ? el("h3", {}, options.title) : null,
      el("span", { class: "spacer" }),
      search,
      exportLink,
    ]),
    el("div", { class: "table-scroll" }, el("table", { "data-table": name }, [el("thead", {}, el("tr", {}, headers)), tbody])),
    note,
  ]);
}
