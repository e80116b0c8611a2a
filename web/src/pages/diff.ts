/**
 * The compare view (tool `diff`): what changed from the base run/host (the "Compare
 * with…" select, `&base_run=&base_host=`) to the current one, as `stepscope diff` says it:
 * a warning first where the runs ran on different hardware or frameworks (`warnings`),
 * the verdict, the step time's and each breakdown category's change, both runs' step
 * times on one chart (a histogram of both runs' steady steps on shared bins, and the
 * aligned steps side by side), the ops, op categories and kernels matched by name (the
 * table component: sortable, searchable, CSV of the server's diff tables), and both runs'
 * trace viewers opened together on the first aligned pair of steady steps (the paired
 * trace view, diff_trace.ts: this tool with `&pair=`), with each run's own viewer too.
 */

import type { Diff } from "../generated/diff";
import { histogramChart, pairedStepChart } from "../components/charts";
import { card, metrics, metric, note } from "../components/metric";
import { findTable } from "../components/table";
import { el } from "../dom";
import { formatTimeUs } from "../format";
import { baseOf, firstSteadyPair, intervalText, isPairView, pairTraceAddresses, pairViewAddress, signedPercent, steadyTimes, stepSeries } from "../state/compare";
import { sharedHistogram, type Bin } from "../state/histogram";
import { diffTracePage } from "./diff_trace";
import { add, grid, tableCard } from "./common";
import type { PageContext, ToolPage } from "./types";

/**
 * Hidden until asked for (so that the rest fit 1280 px): the two profiles' whole totals,
 * which depend on how many steps each holds; the per-step columns compare like with like
 * (the tables are ranked by them), and "Change" keeps the totals' difference.
 */
export const DIFF_LEAST_READ = ["base_total_us", "new_total_us"] as const;
const BASE_COLOR = "#9aa0a6";
const NEW_COLOR = "#1a73e8";

function stepTimeCard(data: Diff): HTMLElement {
  const times = data.step_time;
  const rows = (["mean", "median", "p90"] as const).map((statistic) => {
    const figure = times[statistic];
    const interval = statistic === "mean" ? intervalText(times.mean) : "";
    return el("tr", { "data-statistic": statistic }, [
      el("td", { class: "statistic" }, statistic),
      el("td", { "data-key": "base", "data-value": String(figure.base) }, formatTimeUs(figure.base)),
      el("td", { "data-key": "new", "data-value": String(figure.new) }, formatTimeUs(figure.new)),
      el("td", { "data-key": "change_percent", "data-value": String(figure.change_percent) }, signedPercent(figure.change_percent)),
      el("td", { "data-key": "interval" }, interval),
    ]);
  });
  const head = el("tr", {}, ["", "Base", "New", "Change", "Interval"].map((text) => el("th", { scope: "col" }, text)));
  return card(
    "Step time (steady steps)",
    [
      el("table", { class: "deltas", "data-deltas": "step_time" }, [el("thead", {}, head), el("tbody", {}, rows)]),
      metrics([
        metric("steps_base", times.steps_base, "Base steps counted"),
        metric("steps_new", times.steps_new, "New steps counted"),
        metric("set_aside_base", times.set_aside_base, "Base set aside"),
        metric("set_aside_new", times.set_aside_new, "New set aside"),
      ]),
    ],
    { id: "diff-step-time" },
    true,
  );
}

function binLabel(bin: Bin): string {
  return `${formatTimeUs(bin.start_us)}–${formatTimeUs(bin.end_us)}`;
}

/** Both runs' steady step times on shared bins (state/histogram.ts says the rule). */
function distributionCard(data: Diff): HTMLElement {
  const times = steadyTimes(data);
  const histogram = sharedHistogram(times.base, times.new);
  return card(
    "Step-time distribution, both runs (steady steps)",
    histogramChart("diff-step-histogram", "How many steady steps of each run fall in each step-time bin", {
      labels: histogram.bins.map(binLabel),
      datasets: [
        { label: "base", key: "base", data: histogram.base, backgroundColor: BASE_COLOR },
        { label: "new", key: "new", data: histogram.new, backgroundColor: NEW_COLOR },
      ],
    }),
    { id: "diff-histogram" },
    true,
  );
}

function render(root: HTMLElement, context: PageContext): void {
  const data = context.data as Diff;
  const layout = grid(root);
  const base = baseOf(context.selection.options);
  const series = stepSeries(data);
  const pair = firstSteadyPair(data);
  const links = pair && base ? pairTraceAddresses(pair, base, context.selection) : null;
  add(
    layout,
    card(
      `${data.base} → ${data.new}`,
      [
        // Runs on different hardware or frameworks: said before the figures that do not compare.
        ...data.warnings.map((warning) => note(warning, "warning", { "data-diff-warning": "" })),
        el("p", { id: "diff-verdict", class: "verdict" }, data.verdict),
        links && pair && base
          ? el("p", { id: "diff-trace-links", class: "note" }, [
              el(
                "a",
                { href: pairViewAddress(context.selection, base, data.steps.indexOf(pair)), id: "diff-trace-pair", class: "button-link", "data-trace": "pair" },
                "Open both in the trace viewer",
              ),
              ` at the first aligned steady steps (${String(pair.base_step)} / ${String(pair.new_step)}), stacked, with a control for the next pairs; or one: `,
              links.base ? el("a", { href: links.base, "data-trace": "base" }, "base") : "base: none",
              " · ",
              links.new ? el("a", { href: links.new, "data-trace": "new" }, "new") : "new: none",
            ])
          : null,
        data.memory_peak.base_bytes !== null && data.memory_peak.new_bytes !== null
          ? metrics([
              metric("base_peak_bytes", data.memory_peak.base_bytes, "Base memory peak"),
              metric("new_peak_bytes", data.memory_peak.new_bytes, "New memory peak"),
              metric("peak_change_percent", data.memory_peak.change_percent, "Peak change %"),
            ])
          : note("Memory peak: not recorded in both runs."),
      ],
      { id: "diff-summary" },
      true,
    ),
    stepTimeCard(data),
    distributionCard(data),
    card(
      "Step times, aligned step by step",
      pairedStepChart("diff-step-times", "Step time of each aligned step, base and new", {
        labels: series.labels,
        datasets: [
          { label: "base", key: "base_us", data: series.base, backgroundColor: BASE_COLOR },
          { label: "new", key: "new_us", data: series.new, backgroundColor: NEW_COLOR },
        ],
      }),
      { id: "diff-chart" },
      true,
    ),
    tableCard(context, "breakdown", "Breakdown per step"),
    tableCard(context, "ops", "Ops (largest change per step first)", { searchable: true, leastRead: DIFF_LEAST_READ }),
    tableCard(context, "op_categories", "Op categories", { leastRead: DIFF_LEAST_READ }),
    tableCard(context, "kernels", "Kernels (largest change per step first)", { searchable: true, leastRead: DIFF_LEAST_READ }),
    // Without memory events in either run the summary's "not recorded" line says it all.
    (findTable(context.tables, "memory")?.rows.length ?? 0) > 0 ? tableCard(context, "memory", "Memory devices") : null,
  );
}

export const diffPage: ToolPage = { tables: true, render, modeFor: (options) => (isPairView(options) ? diffTracePage : undefined) };
