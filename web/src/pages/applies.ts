/**
 * Only what applies: a CPU-only profile has no device busy time, no devices table and a
 * step breakdown whose device columns are zero in every step. These pure rules say what a
 * page leaves out, and the page says in one line what it left out and why, so an empty
 * panel never looks like a broken one.
 */

import type { ApiTable } from "../api";

/** Column keys of `table` (among `candidates`, all when omitted) that are 0 in every row. */
export function zeroColumns(table: ApiTable, candidates?: string[]): string[] {
  if (table.rows.length === 0) return [];
  return table.columns
    .map((column, index) => ({ key: column.key, index, kind: column.kind }))
    .filter(({ key, kind }) => kind === "number" && (candidates === undefined || candidates.includes(key)))
    .filter(({ index }) => table.rows.every((row) => row[index] === 0))
    .map(({ key }) => key);
}
