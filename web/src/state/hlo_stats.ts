/**
 * The hlo_stats page's filters and sums: pure functions over the tool's rows (and the
 * tables API's copy of them), so what the page shows can be checked in unit tests against
 * numbers worked out by hand. The filters live in the address (`&hlo_category=` and
 * `&hlo_program=`, not tool options: they narrow what is shown, the tool's answer is the
 * same), so a shared link opens the same narrowed table.
 */

import type { ApiTable } from "../api";
import type { HloOpRow } from "../generated/hlo_stats";

/** "" for a field means every value. */
export interface HloFilter {
  category: string;
  program: string;
}

export const CATEGORY_PARAM = "hlo_category";
export const PROGRAM_PARAM = "hlo_program";
export const NO_FILTER: HloFilter = { category: "", program: "" };

/** A row's `bound_by` when it has none (no FLOPs, bytes or peaks). */
export const UNKNOWN_BOUND = "Unknown";

/** The values the selects offer: each distinct category and program of the rows, sorted. */
export function filterChoices(rows: readonly HloOpRow[]): { categories: string[]; programs: string[] } {
  const sorted = (values: string[]): string[] => [...new Set(values)].sort((a, b) => a.localeCompare(b));
  return { categories: sorted(rows.map((row) => row.category)), programs: sorted(rows.map((row) => row.program)) };
}

function keeps(filter: HloFilter, category: unknown, program: unknown): boolean {
  return (filter.category === "" || category === filter.category) && (filter.program === "" || program === filter.program);
}

/** The rows the filter keeps, in their order. */
export function filterRows(rows: readonly HloOpRow[], filter: HloFilter): HloOpRow[] {
  return rows.filter((row) => keeps(filter, row.category, row.program));
}

/** The table with only the rows the filter keeps (by its `category` and `program` columns). */
export function filterTable(table: ApiTable, filter: HloFilter): ApiTable {
  const category = table.columns.findIndex((column) => column.key === "category");
  const program = table.columns.findIndex((column) => column.key === "program");
  return { ...table, rows: table.rows.filter((row) => keeps(filter, row[category], row[program])) };
}

export interface HloSummary {
  ops: number;
  occurrences: number;
  /** Summed self time (what the shares below divide), and total time (what rates divide). */
  self_time_ps: number;
  self_time_us: number;
  total_time_ps: number;
  /** Summed FLOPs / summed total time of the rows with FLOPs; null when none has any. */
  gflops_per_second: number | null;
  /** Share of the self time in rows bound by each ("Compute", "Memory", "Unknown"), percent. */
  bound_percent: Record<string, number>;
}

/** The shown rows' totals: time, FLOP rate and the memory- / compute-bound split by time. */
export function summarize(rows: readonly HloOpRow[]): HloSummary {
  let self = 0;
  let total = 0;
  let occurrences = 0;
  let flops = 0;
  let flopsTime = 0;
  let withFlops = 0;
  const bound: Record<string, number> = {};
  for (const row of rows) {
    self += row.total_self_time_ps;
    total += row.total_time_ps;
    occurrences += row.occurrences;
    if (row.flops !== null) {
      flops += row.flops;
      flopsTime += row.total_time_ps;
      withFlops += 1;
    }
    const by = row.bound_by ?? UNKNOWN_BOUND;
    bound[by] = (bound[by] ?? 0) + row.total_self_time_ps;
  }
  const bound_percent = Object.fromEntries(Object.entries(bound).map(([by, ps]) => [by, self > 0 ? (100 * ps) / self : 0]));
  return {
    ops: rows.length,
    occurrences,
    self_time_ps: self,
    self_time_us: self / 1e6,
    total_time_ps: total,
    // FLOPs per ps x 1e12 ps/s / 1e9 = FLOPs / ps x 1e3.
    gflops_per_second: withFlops > 0 && flopsTime > 0 ? (flops / flopsTime) * 1e3 : null,
    bound_percent,
  };
}

/** Self time per category (microseconds), most first (then by name): the chart's slices. */
export function categoryTimes(rows: readonly HloOpRow[]): { category: string; time_us: number }[] {
  const sums = new Map<string, number>();
  for (const row of rows) sums.set(row.category, (sums.get(row.category) ?? 0) + row.total_self_time_ps);
  return [...sums.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([category, ps]) => ({ category, time_us: ps / 1e6 }));
}

/** The filter the address gives; a value no row has is dropped (an old link, another profile). */
export function filterFromParams(params: URLSearchParams, choices: { categories: string[]; programs: string[] }): HloFilter {
  const category = params.get(CATEGORY_PARAM) ?? "";
  const program = params.get(PROGRAM_PARAM) ?? "";
  return { category: choices.categories.includes(category) ? category : "", program: choices.programs.includes(program) ? program : "" };
}

/** The address's parameters with the filter in them (an empty field leaves its parameter out). */
export function withFilter(params: URLSearchParams, filter: HloFilter): URLSearchParams {
  const out = new URLSearchParams(params);
  for (const [name, value] of [
    [CATEGORY_PARAM, filter.category],
    [PROGRAM_PARAM, filter.program],
  ] as const) {
    if (value) out.set(name, value);
    else out.delete(name);
  }
  return out;
}
