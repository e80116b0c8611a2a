/**
 * input_pipeline_analyzer: how long each step waited for input (device side) and where
 * the host's input time went, with XProf's verdict. The two charts mirror XProf's
 * "input wait per step" graph and host-side breakdown.
 */

import type { InputPipeline } from "../api";
import { hostBreakdownData, inputWaitData } from "../components/chart-data";
import { doughnutChart, stackedBarChart } from "../components/charts";
import { at, card, metric, metrics, note } from "../components/metric";
import { el } from "../dom";
import { formatPercent } from "../format";
import { hasInputEvents } from "./applies";
import { add, grid, tableCard, twoUp } from "./common";
import type { PageContext, ToolPage } from "./types";

const VERDICT_TEXT: Record<string, string> = {
  highly: "highly input-bound",
  moderately: "moderately input-bound",
  not: "not input-bound",
};

function render(root: HTMLElement, context: PageContext): void {
  const data = context.data as InputPipeline;
  const layout = grid(root);
  const share = data.input_percent;
  const verdict = VERDICT_TEXT[data.verdict] ?? data.verdict;
  if (!hasInputEvents(data)) {
    // Only what applies: no input events, so every input figure is 0; the tool's note says
    // so in one line (and that steps were inferred, where they were) instead of zero charts
    // and empty tables.
    add(layout, card("Input-bound summary", note(data.note, "note", { id: "input-note" }), { id: "input-summary", "data-input-events": "none" }, true));
    return;
  }
  add(
    layout,
    card(
      "Input-bound summary",
      [
        el("p", { class: `summary-text verdict-${data.verdict}` }, `Your program is ${verdict}: on average ${formatPercent(share.mean)} of the step time is spent waiting for input.`),
        metrics([
          metric("verdict", data.verdict, "Input-bound"),
          metric("input_percent_mean", at(share, "mean"), "Mean input share"),
          metric("input_percent_stddev", at(share, "stddev"), "Std. dev."),
          metric("input_percent_min", at(share, "min"), "Min"),
          metric("input_percent_max", at(share, "max"), "Max"),
          metric("step_count", data.steps.length, "Steps"),
          metric("step_source", data.step_source, "Steps from"),
        ]),
        data.steps_inferred
          ? note("Steps inferred: no step markers, the whole profiled window is one step.", "warning", { id: "steps-inferred" })
          : null,
        note(data.note, "note", { id: "input-note" }),
      ],
      { id: "input-summary" },
      true,
    ),
  );
  const hostTotal = Object.values(data.host_breakdown_us).reduce((sum, value) => sum + (value ?? 0), 0);
  add(
    layout,
    card("Input wait per step", stackedBarChart("input_wait", "Input wait and other time per step", inputWaitData(data)), { id: "input-wait" }, true),
    twoUp(
    card(
      "Host-side input time",
      [
        metrics([metric("host_input_time_us", hostTotal, "Host input time")]),
        doughnutChart("host_breakdown", "Host input time by category", hostBreakdownData(data)),
        hostTotal === 0 ? note("No host-side input work in this profile.") : null,
      ],
      { id: "host-breakdown" },
    ),
    tableCard(context, "host_breakdown", "Host input time by category"),
    ),
    tableCard(context, "input_ops", "Input ops"),
    tableCard(context, "steps", "Steps"),
  );
}

export const inputPipelinePage: ToolPage = { tables: true, render };
