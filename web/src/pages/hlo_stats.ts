/**
 * hlo_stats: the HLO ops of the chosen device (the options bar's device select, `all` by
 * default), narrowed by category and program (selects built from the rows, kept in the
 * address) and the table's own search; above the table, the shown rows' totals (self time,
 * FLOP rate, the share of time in memory- and compute-bound ops) and their self time by
 * category as a pie. The CSV export is the table component's (every row of the tool).
 */

import type { ApiColumn, CellValue } from "../api";
import type { HloStats } from "../generated/hlo_stats";
import { categoryColor, type CategoryData } from "../components/chart-data";
import { doughnutChart } from "../components/charts";
import { at, card, metric, metrics, note } from "../components/metric";
import { addressState, findTable, renderTable, type TableState } from "../components/table";
import { el } from "../dom";
import {
  categoryTimes,
  filterChoices,
  filterFromParams,
  filterRows,
  filterTable,
  summarize,
  withFilter,
  type HloFilter,
} from "../state/hlo_stats";
import { add, grid, opInTraceViewer } from "./common";
import type { PageContext, ToolPage } from "./types";

const TABLE = "hlo_ops";
/**
 * Hidden until asked for (so that the rest fit 1280 px): the inclusive times (an XLA op
 * does not nest, so they equal the self times shown) and the FLOPs and bytes (the GFLOP/s
 * and GB/s shown times the self time; the intensity is their ratio).
 */
export const HLO_LEAST_READ = ["total_time_us", "avg_time_us", "flops", "bytes_accessed"] as const;
export const CATEGORY_CHART = "hlo_categories";

/** The category pie's data: self time (us) per category of the shown rows. */
export function categoryChartData(data: HloStats, filter: HloFilter): CategoryData {
  const slices = categoryTimes(filterRows(data.rows, filter));
  return {
    labels: slices.map((slice) => slice.category),
    datasets: [
      {
        label: "Self time",
        key: "total_self_time_us",
        data: slices.map((slice) => slice.time_us),
        backgroundColor: slices.map((slice, index) => categoryColor(slice.category, index)),
      },
    ],
  };
}

/** An op's whole HLO text (its hidden `expression` column), shown on its name's hover; null where there is none. */
function expressionOf(row: CellValue[], columns: ApiColumn[]): string | null {
  const text = row[columns.findIndex((column) => column.key === "expression")];
  return typeof text === "string" && text !== "" ? text : null;
}

function select(name: string, label: string, values: string[], current: string, changed: (value: string) => void): HTMLElement {
  const control = el("select", { name, id: name }, [el("option", { value: "" }, "all"), ...values.map((value) => el("option", { value }, value))]);
  control.value = current;
  control.addEventListener("change", () => changed(control.value));
  return el("label", { class: "tool-option" }, [label, " ", control]);
}

function summaryMetrics(data: HloStats, filter: HloFilter): HTMLElement {
  const shown = summarize(filterRows(data.rows, filter));
  return metrics([
    metric("shown_self_time_us", shown.self_time_us, "Self time (shown ops)"),
    metric("total_self_time_us", at(data, "total_self_time_us"), "Self time (all ops)"),
    metric("shown_ops", shown.ops, "HLO ops shown"),
    metric("shown_occurrences", shown.occurrences, "Executions"),
    metric("gflops_per_second", shown.gflops_per_second, "GFLOP/s", "Summed FLOPs / summed time of the shown ops that record FLOPs"),
    metric("memory_bound_percent", shown.bound_percent.Memory ?? 0, "Memory-bound time", "Share of the shown ops' self time in memory-bound ops"),
    metric("compute_bound_percent", shown.bound_percent.Compute ?? 0, "Compute-bound time", "Share of the shown ops' self time in compute-bound ops"),
    metric("ridge_point", at(data, "ridge_point"), "Ridge (FLOP/byte)"),
  ]);
}

function render(root: HTMLElement, context: PageContext): void {
  const data = context.data as HloStats;
  const layout = grid(root);
  const table = findTable(context.tables, TABLE);
  if (data.rows.length === 0 || !table) {
    add(layout, card("HLO ops", note("No XLA (HLO) ops in this profile: HLO op stats need a JAX, TensorFlow or PyTorch/XLA profile.", "note", { id: "no-hlo-ops" }), { id: "hlo-summary" }, true));
    return;
  }
  const choices = filterChoices(data.rows);
  let filter = filterFromParams(new URLSearchParams(location.search), choices);
  const state: TableState = addressState(TABLE);
  const numbers = el("div", { class: "metrics-slot" });
  const chartSlot = el("div", { class: "chart-slot" });
  const tableSlot = el("div", { class: "table-slot" });

  const show = (): void => {
    numbers.replaceChildren(summaryMetrics(data, filter));
    chartSlot.replaceChildren(doughnutChart(CATEGORY_CHART, "HLO op self time by category", categoryChartData(data, filter), "pie"));
    tableSlot.replaceChildren(
      renderTable(filterTable(table, filter), {
        title: "HLO op stats",
        selection: context.selection,
        state,
        leastRead: HLO_LEAST_READ,
        cellTitle: (column, row, columns) => (column.key === "name" ? expressionOf(row, columns) : null),
        cellHref: (column, row, columns) => opInTraceViewer(context, column, row, columns),
      }),
    );
  };
  const change = (next: HloFilter): void => {
    filter = next;
    const query = withFilter(new URLSearchParams(location.search), filter).toString();
    history.replaceState(history.state, "", `${location.pathname}${query ? `?${query}` : ""}`);
    show();
  };
  const filters = el("div", { id: "hlo-filters", class: "tool-options", role: "group", "aria-label": "HLO op filters" }, [
    select("hlo-category", "category", choices.categories, filter.category, (category) => change({ ...filter, category })),
    select("hlo-program", "program", choices.programs, filter.program, (program) => change({ ...filter, program })),
  ]);
  show();
  const peaks = data.ridge_point === null ? note("The devices' peaks are unknown or differ: no op is marked memory- or compute-bound (pass peak_flops and peak_bw).", "warning", { id: "hlo-no-peaks" }) : null;
  add(
    layout,
    card("HLO ops", [filters, numbers, peaks], { id: "hlo-summary" }, true),
    card("Self time by category", chartSlot, { id: "hlo-category-chart" }),
    card(null, tableSlot, { "data-card": TABLE }, true),
  );
}

export const hloStatsPage: ToolPage = { tables: true, render };
