/**
 * framework_op_stats: every framework op, host and device side, with XProf's "include
 * idle" switch (adds each side's IDLE row and shows shares of the time including idle)
 * and the host / device op-type pies.
 */

import type { ApiTable, CellValue, FrameworkOpStats } from "../api";
import { opTypePieData } from "../components/chart-data";
import { doughnutChart } from "../components/charts";
import { card, note } from "../components/metric";
import { addressState, findTable, renderTable, withoutColumns, type TableState } from "../components/table";
import { el } from "../dom";
import { missingSidesNote, sidesWithOps } from "./applies";
import { add, grid, opInTraceViewer, twoUp } from "./common";
import type { PageContext, ToolPage } from "./types";

/**
 * The table as shown: without idle, shares of op time (and their running total); with
 * idle, the IDLE rows added and shares of op time plus idle, since the other two columns
 * have no value for IDLE and mean something else.
 */
export function opsView(ops: ApiTable, idle: ApiTable | undefined, includeIdle: boolean): ApiTable {
  if (!includeIdle) return withoutColumns(ops, ["self_time_percent_with_idle"]);
  const rows: CellValue[][] = [...ops.rows, ...(idle?.rows ?? [])];
  return withoutColumns({ ...ops, rows }, ["self_time_percent", "cumulative_self_time_percent"]);
}

/**
 * Hidden until asked for (so that the rest fit 1280 px): the average time (total time
 * over occurrences, both shown) and the running total of the self-time shares.
 */
export const FRAMEWORK_LEAST_READ = ["avg_time_us", "cumulative_self_time_percent"] as const;

function pieCard(data: FrameworkOpStats, side: "Host" | "Device", name: string): HTMLElement {
  const chart = opTypePieData(data.rows, side);
  const title = `${side} self time by op type`;
  return card(
    title,
    chart.labels.length > 0 ? doughnutChart(name, title, chart, "pie") : note(`No ${side.toLowerCase()}-side ops in this profile.`),
    {
      id: name.replace(/_/g, "-"),
    },
  );
}

function render(root: HTMLElement, context: PageContext): void {
  const data = context.data as FrameworkOpStats;
  const layout = grid(root);
  // Only what applies: a side without ops gets no pie, and the page says so in one line.
  const sides = sidesWithOps(data.rows);
  const missing = missingSidesNote(data.rows);
  if (sides.length === 0) {
    add(layout, card("Framework ops", note(missing, "note", { id: "ops-missing" }), { id: "framework-ops" }, true));
    return;
  }
  const pies = sides.map((side) => pieCard(data, side, `${side.toLowerCase()}_op_types`));
  add(layout, missing ? note(missing, "note", { id: "ops-missing" }) : null, pies.length === 2 ? twoUp(pies[0]!, pies[1]!) : pies[0]);

  const ops = findTable(context.tables, "framework_ops");
  const idle = findTable(context.tables, "idle");
  if (!ops) return;
  // One state for both views (with and without idle), starting from the address.
  const state: TableState = addressState("framework_ops");
  const slot = el("div", { class: "table-slot" });
  const checkbox = el("input", { type: "checkbox", id: "include-idle" });
  const toggle = el("label", { class: "toggle" }, [checkbox, " Include idle time"]);
  const show = (): void => {
    const view = opsView(ops, idle, checkbox.checked);
    const focused = document.activeElement === checkbox;
    slot.replaceChildren(
      renderTable(view, {
        title: "Framework ops",
        controls: [toggle],
        selection: context.selection,
        state,
        leastRead: FRAMEWORK_LEAST_READ,
        rowAttrs: (row, columns) => {
          const type = row[columns.findIndex((column) => column.key === "type")];
          return type === "IDLE" ? { class: "idle-row", "data-idle": "true" } : {};
        },
        cellHref: (column, row, columns) => opInTraceViewer(context, column, row, columns),
      }),
    );
    if (focused) checkbox.focus(); // the switch moved to the new table's toolbar
  };
  checkbox.addEventListener("change", show);
  show();
  add(
    layout,
    card(null, slot, { id: "framework-ops" }, true),
  );
}

export const frameworkOpStatsPage: ToolPage = { tables: true, render };
