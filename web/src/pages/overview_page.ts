/**
 * overview_page: the performance summary (step time, input share, device busy), the
 * step-time graph (each step's time split into the tool's categories), top ops, the run
 * environment and the recommendation, laid out as XProf's overview page is; on GPU
 * profiles a GPU card with the PyTorch TensorBoard plugin's figures and a top-kernels pie.
 */

import type { ApiTable, Evidence, GpuMetrics, OverviewPage, OverviewStep, PredictedGain } from "../api";
import { el } from "../dom";
import { stepTimeData, topKernelsPieData } from "../components/chart-data";
import { doughnutChart, stackedBarChart } from "../components/charts";
import { at, card, metric, metricValue, metrics, note } from "../components/metric";
import { findTable, withoutColumns, type TableOptions } from "../components/table";
import { humanize, rawAttr } from "../format";
import { buildQuery, evidenceAddress, traceViewerAddress } from "../state/url";
import { zeroColumns } from "./applies";
import { add, grid, tableCard } from "./common";
import type { PageContext, ToolPage } from "./types";

/** The tool whose what-if each finding's predicted gain comes from. */
const CRITICAL_PATH = "critical_path";

const STEPS_TABLE = "steps";
const US = "_us";

/** The steps table's breakdown columns (`<category>_us`) that are 0 in every step. */
function zeroBreakdown(steps: ApiTable | undefined): string[] {
  if (!steps) return [];
  const breakdown = steps.columns.map((column) => column.key).filter((key) => key.endsWith(US) && key !== "step_time_us");
  return zeroColumns(steps, breakdown);
}

function summaryCard(data: OverviewPage): HTMLElement {
  const rec = data.recommendation;
  const hasDevice = data.devices.length > 0;
  const input = rec && rec.input_percent !== null ? at(rec, "input_percent") : at(data.breakdown_percent, "input");
  const items = [
    metric("step_time_mean_us", at(data.step_time_us, "mean"), "Average step time"),
    metric("step_time_stddev_us", at(data.step_time_us, "stddev"), "Step time std. dev."),
    metric("step_time_min_us", at(data.step_time_us, "min"), "Fastest step"),
    metric("step_time_max_us", at(data.step_time_us, "max"), "Slowest step"),
    metric("input_percent", input, "Input (mean per step)", "Mean of the kept steps' input shares, as XProf's input-bound verdict reads it; the breakdown's Input is of their summed time"),
    hasDevice && metric("device_busy_percent", at(data.device, "busy_percent"), "Device busy", "Share of the devices' active span (first device work to last) they were running work"),
    hasDevice && metric("device_busy_percent_of_window", at(data.device, "busy_percent_of_window"), "Device busy (window)", "Share of the whole profile window the devices were running work"),
    hasDevice && metric("kernel_launch_percent", at(rec, "kernel_launch_percent"), "Kernel launch (median per step)", "Median of the kept steps' kernel-launch shares, the figure the verdict's rule reads; the breakdown's is of their summed time"),
    metric("step_count", data.steps.length, "Steps"),
    metric("step_set_aside_count", (data.set_aside ?? []).length, "Steps set aside", "Warm-up (compile) and one-off steps left out of these statistics"),
    metric("step_source", data.step_source, "Steps from"),
  ];
  const flops = data.flops;
  if (flops && flops.gflops_per_second !== null) items.push(metric("flops_gflops_per_second", at(flops, "gflops_per_second"), "Device GFLOP/s"));
  if (flops && flops.utilization_percent !== null) items.push(metric("flops_utilization_percent", at(flops, "utilization_percent"), "FLOPS utilisation"));
  if (flops && flops.peak_tflops_per_second !== null) items.push(metric("flops_peak_tflops_per_second", at(flops, "peak_tflops_per_second"), "Device peak TFLOP/s"));
  const through = data.throughput;
  if (through && through.mfu_percent !== null)
    items.push(metric("mfu_percent", at(through, "mfu_percent"), "MFU", "Model FLOP utilisation: the kept steps' FLOPs over their time and the devices' summed peak FLOP/s"));
  if (through && through.tokens_per_second !== null) items.push(metric("tokens_per_second", at(through, "tokens_per_second"), "Tokens/s", "Tokens passed to stepscope.step over the kept steps' time"));
  if (through && through.samples_per_second !== null) items.push(metric("samples_per_second", at(through, "samples_per_second"), "Samples/s", "Samples passed to stepscope.step over the kept steps' time"));
  return card(
    "Performance summary",
    [
      metrics(items.filter((item): item is HTMLElement => item !== false)),
      through && through.mfu_percent !== null && through.flop_assumptions.length
        ? note(`MFU assumes, for ${through.flop_assumptions.map((entry) => `${entry.ops} op(s): ${entry.assumption}`).join("; ")}.`, "note", { id: "mfu-assumptions" })
        : null,
      hasDevice
        ? null
        : note("No accelerator in this profile: its steps are host work, so device busy time, kernel launch, the devices table, the GPU figures and the device categories are left out.", "note", {
            id: "no-device",
          }),
      data.steps_inferred
        ? note(
            "Steps inferred: the profile has no step markers, so the whole profiled window is treated as one step.",
            "warning",
            { id: "steps-inferred" },
          )
        : null,
      data.recommendation?.set_aside ? note(data.recommendation.set_aside, "note", { id: "steps-set-aside" }) : null,
      data.recommendation?.outside_steps ? note(data.recommendation.outside_steps, "warning", { id: "outside-steps" }) : null,
    ],
    { id: "summary" },
    true,
  );
}

/** The breakdown's labels where the category's name alone would say two things. */
const BREAKDOWN_LABELS: Record<string, string> = { idle: "Idle (no host or device activity)" };

function breakdownCard(data: OverviewPage, zero: string[]): HTMLElement {
  const percents = data.breakdown_percent ?? {};
  const entries = Object.keys(percents).filter((category) => !zero.includes(`${category}${US}`));
  const left = Object.keys(percents).filter((category) => zero.includes(`${category}${US}`));
  return card(
    "Step time breakdown",
    [
      note("Shares of the kept steps' summed time (a longer step weighs more).", "note", { id: "breakdown-basis" }),
      el(
        "dl",
        { class: "breakdown" },
        entries.flatMap((category) => [
          el("dt", {}, BREAKDOWN_LABELS[category] ?? humanize(category)),
          el("dd", {}, metricValue(`breakdown_${category}_percent`, at(percents, category), "span")),
        ]),
      ),
      left.length > 0 ? note(`Zero in every step, not shown: ${left.map(humanize).join(", ")}.`, "note", { id: "breakdown-zero" }) : null,
    ],
    { id: "breakdown" },
  );
}

function environmentCard(data: OverviewPage): HTMLElement {
  const env = data.environment;
  return card(
    "Run environment",
    [
      metrics([
        metric("env_framework", env.framework, "Framework"),
        metric("env_device_type", env.device_type, "Device type"),
        metric("env_device_count", at(env, "device_count"), "Devices"),
        metric("env_hosts", env.hosts !== undefined ? at(env, "hosts") : 1, "Hosts"),
        metric("env_source_format", env.source_format, "Profile format"),
        metric("env_host", env.host, "Host"),
      ]),
      env.devices.length > 0 ? el("ul", { class: "device-list" }, env.devices.map((device) => el("li", {}, device))) : null,
      Object.keys(env.versions ?? {}).length > 0
        ? el(
            "ul",
            { class: "device-list" },
            Object.entries(env.versions).map(([name, version]) => el("li", {}, `${name} ${version}`)),
          )
        : null,
    ],
    { id: "environment" },
  );
}

/** The GPU figures' one-line definitions (shown under each figure and on hover). */
export const GPU_DEFINITIONS = {
  utilization: "Time at least one kernel ran, over the device's active span",
  sm_efficiency: "Per kernel min(1, blocks ÷ SMs), weighted by its time, over the active span",
  occupancy: "The kernels' estimated achieved occupancy, weighted by their time",
  tensor_core: "Share of kernel time in kernels whose names say TensorCore",
};

/** A figure with its definition written under it. */
function defined(key: string, source: Parameters<typeof metric>[1], label: string, definition: string): HTMLElement {
  const item = metric(key, source, label, definition);
  item.appendChild(el("div", { class: "metric-definition" }, definition));
  return item;
}

function gpuDevice(gpu: GpuMetrics, index: number): HTMLElement {
  const notes = [
    gpu.sm_efficiency_note ? note(`SM efficiency: ${gpu.sm_efficiency_note}`, "note", { "data-note": "sm_efficiency" }) : null,
    gpu.occupancy_note ? note(`Achieved occupancy: ${gpu.occupancy_note}`, "note", { "data-note": "occupancy" }) : null,
  ];
  return el("div", { class: "gpu-device", "data-device": gpu.device }, [
    el("h3", {}, gpu.sm_count !== null ? `${gpu.device} (${gpu.sm_count} SMs)` : gpu.device),
    metrics([
      defined("gpu_utilization_percent", at(gpu, "utilization_percent"), "GPU utilisation", GPU_DEFINITIONS.utilization),
      defined("gpu_sm_efficiency_percent", at(gpu, "sm_efficiency_percent"), "Est. SM efficiency", GPU_DEFINITIONS.sm_efficiency),
      defined("gpu_achieved_occupancy_percent", at(gpu, "achieved_occupancy_percent"), "Est. achieved occupancy", GPU_DEFINITIONS.occupancy),
      defined("gpu_tensor_core_percent", at(gpu, "tensor_core_percent"), "TensorCore kernels", GPU_DEFINITIONS.tensor_core),
    ]),
    ...notes,
    gpu.top_kernels.length > 0 ? doughnutChart(`top_kernels_${index}`, `Top kernels by time on ${gpu.device}`, topKernelsPieData(gpu), "pie") : null,
  ]);
}

/** Only on profiles with GPU kernels (none on CPU-only and TPU profiles). */
function gpuCard(data: OverviewPage): HTMLElement | null {
  const gpus = data.gpus ?? [];
  if (gpus.length === 0) return null;
  return card("GPU", gpus.map(gpuDevice), { id: "gpu" }, true);
}

const LINK_NAME_CHARS = 60;

/**
 * What an evidence link opens, in words: the tool, then the op it searches for (cut to
 * LINK_NAME_CHARS: an XLA op's name holds its whole HLO) or the table and its sort.
 */
export function evidenceLinkText(item: Pick<Evidence, "tool" | "table" | "sort_key" | "query">): string {
  const tool = humanize(item.tool);
  if (item.table === null) return tool;
  if (item.query) return `${tool}: ${item.query.length > LINK_NAME_CHARS ? `${item.query.slice(0, LINK_NAME_CHARS - 1)}…` : item.query}`;
  const sort = item.sort_key === null ? "" : ` by ${humanize(item.sort_key).toLowerCase()}, largest first`;
  return `${tool}: ${humanize(item.table).toLowerCase()}${sort}`;
}

/** What fixing a finding would buy (the critical path's what-if), linked to that tool. */
function predictedGain(predicted: PredictedGain, context: PageContext): HTMLElement {
  return el("div", { class: "predicted-gain", "data-change": predicted.change, "data-gain-percent": rawAttr(predicted.gain_percent, predicted, "gain_percent") }, [
    "What if ",
    el("a", { href: buildQuery({ run: context.selection.run, host: context.selection.host, tool: CRITICAL_PATH }), "data-tool": CRITICAL_PATH, title: predicted.description }, predicted.text),
  ]);
}

/** Each finding's numbers, linked to the tool and rows that show them, with what fixing it would buy. */
function evidenceList(data: OverviewPage, context: PageContext): HTMLElement | null {
  const evidence = data.recommendation.evidence ?? [];
  if (evidence.length === 0) return null;
  return el(
    "ul",
    { class: "evidence" },
    evidence.map((item) =>
      el("li", { "data-finding": item.finding }, [
        `${item.text}: `,
        el("a", { href: evidenceAddress(context.selection, item), "data-tool": item.tool, title: "Open the rows this rests on" }, evidenceLinkText(item)),
        item.predicted ? predictedGain(item.predicted, context) : null,
      ]),
    ),
  );
}

function recommendationCard(data: OverviewPage, context: PageContext): HTMLElement {
  const rec = data.recommendation;
  return card(
    "Recommendation for next step",
    [
      el("p", { class: "summary-text", "data-metric": "recommendation_summary", "data-value": rec.summary }, rec.summary),
      evidenceList(data, context),
      el("ul", { class: "next-steps" }, rec.next_steps.map((step) => el("li", {}, step))),
    ],
    { id: "recommendation", "data-input-bound": rec.input_bound },
  );
}

/** The trace viewer's address showing one step's window, on this run and host. */
export function stepInTraceViewer(context: PageContext, step: OverviewStep): string {
  return traceViewerAddress(context.selection, { start_ps: String(step.start_ps), end_ps: String(step.start_ps + step.step_time_ps) });
}

function render(root: HTMLElement, context: PageContext): void {
  const data = context.data as OverviewPage;
  const layout = grid(root);
  const steps = findTable(context.tables, STEPS_TABLE);
  const zero = zeroBreakdown(steps);
  add(layout, summaryCard(data), recommendationCard(data, context), environmentCard(data), breakdownCard(data, zero), gpuCard(data));
  add(
    layout,
    card(
      "Step-time graph",
      data.steps.length > 0
        ? stackedBarChart("step_time", "Step time per step, by category (click a step to open it in the trace viewer)", stepTimeData(data), "step", (index) => {
            const step = data.steps[index];
            if (step) location.assign(stepInTraceViewer(context, step));
          })
        : note("No steps in this profile."),
      { id: "step-time-graph" },
      true,
    ),
  );
  add(
    layout,
    tableCard(context, "top_ops", "Top operations by self time", { cellTitle: topOpTitle(data) }),
    data.devices.length > 0 && tableCard(context, "devices", "Devices"),
    // The view leaves out the all-zero columns; the CSV export still has every column.
    steps && tableCard({ ...context, tables: [withoutColumns(steps, zero)] }, STEPS_TABLE, "Steps"),
  );
}

/** A top op's name on hover: the whole event name it shortens (XLA's HLO text), where it does. */
function topOpTitle(data: OverviewPage): NonNullable<TableOptions["cellTitle"]> {
  const full = new Map(data.top_ops.filter((op) => op.full_name).map((op) => [op.name, op.full_name]));
  return (column, row, columns) => (column.key === "name" ? (full.get(String(row[columns.indexOf(column)])) ?? null) : null);
}

export const overviewPage: ToolPage = { tables: true, render };
