/**
 * A table's sort and search in the address, so a shared link opens the same sorted,
 * filtered table: `&sort=<table>:<key>:<asc|desc>` and `&q=<table>:<text>`, one parameter
 * per table that has one (a page with several tables repeats them). Table names and
 * column keys are identifiers without ":"; the search text may hold anything (it is what
 * follows the first ":"). These are extra parameters of the selection, so `keptParams`
 * keeps them on a deep link and drops them when the run, host or tool changes.
 */

import type { SortState } from "../components/table-logic";

export interface TableAddress {
  sort: SortState | null;
  filter: string;
}

const DIRECTIONS = { asc: "ascending", desc: "descending" } as const;

function own(params: URLSearchParams, name: string, table: string): string | undefined {
  const prefix = `${table}:`;
  return params
    .getAll(name)
    .find((value) => value.startsWith(prefix))
    ?.slice(prefix.length);
}

/** The table's sort and search as the address gives them (none where it gives none or garbage). */
export function tableAddress(params: URLSearchParams, table: string): TableAddress {
  const sortText = own(params, "sort", table);
  let sort: SortState | null = null;
  if (sortText !== undefined) {
    const cut = sortText.lastIndexOf(":");
    const key = sortText.slice(0, cut);
    const direction = DIRECTIONS[sortText.slice(cut + 1) as keyof typeof DIRECTIONS] as SortState["direction"] | undefined;
    if (cut > 0 && direction) sort = { key, direction };
  }
  return { sort, filter: own(params, "q", table) ?? "" };
}

/**
 * The parameters with the table's sort and search set to `state`: its old entries go, the
 * other tables' and parameters stay in their order, a new entry goes last; a blank search
 * and no sort leave no entry.
 */
export function withTableAddress(params: URLSearchParams, table: string, state: TableAddress): URLSearchParams {
  const prefix = `${table}:`;
  const next = new URLSearchParams();
  let sortDone = false;
  let filterDone = false;
  const sortValue = state.sort ? `${table}:${state.sort.key}:${state.sort.direction === "ascending" ? "asc" : "desc"}` : null;
  const filterValue = state.filter.trim() ? `${table}:${state.filter}` : null;
  for (const [name, value] of params) {
    if ((name === "sort" || name === "q") && value.startsWith(prefix)) {
      // Replaced in place, so editing a search does not move it to the end.
      if (name === "sort" && sortValue !== null && !sortDone) next.append(name, sortValue);
      if (name === "q" && filterValue !== null && !filterDone) next.append(name, filterValue);
      if (name === "sort") sortDone = true;
      else filterDone = true;
      continue;
    }
    next.append(name, value);
  }
  if (!sortDone && sortValue !== null) next.append("sort", sortValue);
  if (!filterDone && filterValue !== null) next.append("q", filterValue);
  return next;
}

/** Whether two table states mean the same view. */
export function sameTableAddress(a: TableAddress, b: TableAddress): boolean {
  return a.filter === b.filter && a.sort?.key === b.sort?.key && a.sort?.direction === b.sort?.direction;
}
