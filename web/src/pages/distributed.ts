/**
 * The distributed view (tool `distributed`, offered on every run): every host a rank, or
 * (option `by`, the options bar's select: rank / device) every device of every host a
 * unit, as `stepscope distributed --by` reads them. The ranks and how their clocks were
 * aligned; a heat map of rank x step (step time, or the wait inside collectives, or the
 * collective time not hidden behind compute: the select), whose cells open that rank's
 * trace viewer zoomed to that step; the stragglers (rank, step, the late stage, how much
 * late) and the collective table (the table component: sortable, searchable, CSV of the
 * server's tables), the job's critical path across ranks (runs of a few ranks), and every
 * rank's steps.
 */

import type { ApiColumn, CellValue } from "../api";
import { heatLegend, heatmapChart } from "../components/heatmap";
import { card, metric, metrics, note } from "../components/metric";
import { findTable } from "../components/table";
import { el } from "../dom";
import type { Distributed } from "../generated/distributed";
import { DEFAULT_METRIC, heatGrid, isMetric, METRICS, stepTraceAddress, unitWord, type MetricName } from "../state/distributed";
import { add, grid, tableCard } from "./common";
import type { PageContext, ToolPage } from "./types";

export const HEATMAP_CHART = "distributed-heatmap";
const LINKED_COLUMNS = ["rank", "step"];

function heatmapCard(data: Distributed, run: string): HTMLElement {
  const holder = el("div", { class: "heatmap-holder" });
  const draw = (metric: MetricName): void => {
    const heat = heatGrid(data, metric);
    const chart = heatmapChart(HEATMAP_CHART, `${METRICS[metric].label} of each ${unitWord(data)} and step`, heat, METRICS[metric].label, (cell) => {
      const address = stepTraceAddress(run, data, cell.rank, cell.step);
      if (address) location.assign(address);
    });
    holder.replaceChildren(chart, heatLegend(heat));
    holder.setAttribute("data-metric-shown", metric);
  };
  const select = el(
    "select",
    { id: "distributed-metric", "aria-label": "What the heat map shows" },
    Object.entries(METRICS).map(([name, entry]) => el("option", { value: name }, entry.label)),
  );
  select.value = DEFAULT_METRIC;
  select.addEventListener("change", () => {
    if (isMetric(select.value)) draw(select.value);
  });
  const body = [el("label", { class: "option" }, ["Show ", select]), holder, el("p", { class: "note" }, `Darker is longer. Click a cell for that ${unitWord(data) === "device" ? "device's host (the device is a track of it)" : "rank"}: its trace viewer at that step.`)];
  const box = card(`${unitWord(data) === "device" ? "Device" : "Rank"} × step`, body, { id: "distributed-heatmap-card" }, true);
  // Drawn once the card is in the document (Chart.js sizes itself to its box).
  queueMicrotask(() => draw(DEFAULT_METRIC));
  return box;
}

/** A straggler's or a step's rank and step cells open that rank's trace viewer at that step. */
function stepLink(context: PageContext, data: Distributed) {
  return (column: ApiColumn, row: CellValue[], columns: ApiColumn[]): string | null => {
    if (!LINKED_COLUMNS.includes(column.key)) return null;
    const rank = row[columns.findIndex((candidate) => candidate.key === "rank")];
    const step = row[columns.findIndex((candidate) => candidate.key === "step")];
    return typeof rank === "number" && typeof step === "number" ? stepTraceAddress(context.selection.run, data, rank, step) : null;
  };
}

function summaryCard(data: Distributed): HTMLElement {
  const word = unitWord(data);
  const hosts = new Set(data.ranks.map((rank) => rank.host_rank)).size;
  return card(
    word === "device" ? `${data.run}: ${data.ranks.length} devices of ${hosts} host${hosts === 1 ? "" : "s"}` : `${data.run}: ${data.ranks.length} ranks`,
    [
      metrics([metric("ranks", data.ranks.length, word === "device" ? "Devices found" : "Ranks found"), metric("world_size", data.world_size, word === "device" ? "Units" : "World size"), metric("stragglers", data.stragglers.length, "Stragglers")]),
      el("p", { id: "distributed-ranks-from" }, `${word === "device" ? "Devices" : "Ranks"} from ${data.rank_source}.`),
      el("p", { id: "distributed-alignment" }, `Clocks: ${data.alignment}.`),
      ...data.warnings.map((warning) => note(warning, "warning")),
    ],
    { id: "distributed-summary" },
    true,
  );
}

/**
 * The job's critical path across ranks: which rank and kind set each step, and the job's
 * predicted step without each rank's straggle; else why it was not made (a run by device,
 * or of one rank or more than a few).
 */
function jobPathCards(context: PageContext, data: Distributed): (HTMLElement | null)[] {
  if (data.job_steps.length === 0) {
    return data.job_paths_note ? [card("Critical path across ranks", note(`Not made: ${data.job_paths_note}.`), { "data-card": "job_steps" }, true)] : [];
  }
  const noLinks = { cellHref: () => null };
  return [
    tableCard(context, "job_steps", "Critical path across ranks: the rank and kind that set each step", noLinks),
    tableCard(context, "straggle_removed", "What if a rank's straggle were removed: the job's predicted step", noLinks),
  ];
}

function render(root: HTMLElement, context: PageContext): void {
  const data = context.data as Distributed;
  const layout = grid(root);
  const rows = (name: string): number => findTable(context.tables, name)?.rows.length ?? 0;
  const links = stepLink(context, data);
  const rule = data.rule;
  add(
    layout,
    summaryCard(data),
    heatmapCard(data, context.selection.run),
    rows("stragglers") > 0
      ? tableCard(context, "stragglers", "Stragglers (largest excess first)", { cellHref: links })
      : card(
          "Stragglers",
          note(
            `None: no ${unitWord(data)}'s ${unitWord(data) === "device" ? "busy time, " : ""}step time, collective wait or work time is above the median of the ${unitWord(data)}s by ${rule.k_sigma} sigma and ${100 * rule.min_excess_fraction}% of the step` +
              (data.ranks.length < rule.min_ranks ? ` (it takes ${rule.min_ranks} ${unitWord(data)}s to name one; this run has ${data.ranks.length}).` : "."),
          ),
          { "data-card": "stragglers" },
          true,
        ),
    rows("collectives") > 0
      ? // A collective's name is not an event's (the events are nccl:<op>, the kernels the NCCL algorithm's): no trace link.
        tableCard(context, "collectives", "Collectives (largest wait skew first)", { searchable: true, cellHref: () => null })
      : card("Collectives", note("No collective calls on any rank (no NCCL/RCCL or XLA collective kernels in these traces)."), { "data-card": "collectives" }, true),
    ...jobPathCards(context, data),
    tableCard(context, "ranks", unitWord(data) === "device" ? "Devices (rank: the unit's number; host rank: its host's)" : "Ranks"),
    tableCard(context, "steps", `Steps of every ${unitWord(data)}`, { searchable: true, cellHref: links }),
  );
}

export const distributedPage: ToolPage = { tables: true, render };
