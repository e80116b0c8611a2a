/**
 * critical_path: for every step, the chain of work and waits that set its length, by kind
 * (a stacked bar per step), and what a change would buy (the what-if table, each row's gain
 * against the mean step). A step is picked with the select or by clicking its bar; the
 * ops and kernels on its path are listed below, and "Show on the timeline" opens the trace
 * viewer on that step with the path drawn over it. The bar and the what-if table sit side
 * by side so both fit a 1280x800 window without scrolling.
 */

import type { CriticalPath, StepPath } from "../api";
import { stackedBarChart } from "../components/charts";
import { at, card, metric, metrics, note } from "../components/metric";
import { renderTable } from "../components/table";
import { el } from "../dom";
import { formatCount } from "../format";
import { CRITICAL_PATH_PARAM, traceViewerAddress } from "../state/url";
import { pathKindsData, topTable, whatIfTable } from "./critical_path_data";
import { add, grid, twoUp } from "./common";
import type { PageContext, ToolPage } from "./types";

const CHART = "critical_path_kinds";

function stepCard(context: PageContext, step: StepPath): HTMLElement {
  const timeline = traceViewerAddress(context.selection, {
    start_ps: String(step.start_ps),
    end_ps: String(step.start_ps + step.duration_ps),
    [CRITICAL_PATH_PARAM]: "1",
  });
  return card(
    `Ops and kernels on step ${formatCount(step.step)}'s path`,
    [
      el("p", { class: "note" }, [
        `${formatCount(step.segments.start_ps.length)} segments on the path. `,
        el("a", { href: timeline, id: "critical-path-timeline", "data-step": step.step }, "Show on the timeline"),
      ]),
      renderTable(topTable(step), { searchable: false }),
    ],
    { id: "critical-path-top", "data-step": String(step.step) },
    true,
  );
}

function render(root: HTMLElement, context: PageContext): void {
  const data = context.data as CriticalPath;
  const layout = grid(root);
  if (data.steps.length === 0) {
    add(layout, card("Critical path", note("No steps with a critical path in this profile (no step markers, or no thread or stream to anchor them on).", "note", { id: "critical-path-empty" }), { id: "critical-path-summary" }, true));
    return;
  }
  const picker = el(
    "select",
    { id: "critical-path-step", "aria-label": "Step" },
    data.steps.map((step, index) => el("option", { value: String(index) }, `step ${formatCount(step.step)}`)),
  );
  const slot = el("div", { class: "grid-contents" });
  const show = (index: number): void => {
    picker.value = String(index);
    slot.replaceChildren(stepCard(context, data.steps[index]!));
  };
  picker.addEventListener("change", () => show(Number(picker.value)));
  add(
    layout,
    card(
      "Critical path",
      [
        metrics([
          metric("step_count", data.steps.length, "Steps"),
          metric("mean_step_ps", at(data, "mean_step_ps"), "Mean step"),
          metric("anchor", at(data, "anchor"), "Steps measured on"),
        ]),
        el("div", { class: "inline-control" }, [el("label", { for: "critical-path-step" }, "Step "), picker]),
      ],
      { id: "critical-path-summary" },
      true,
    ),
    twoUp(
      card("Each step's path by kind", stackedBarChart(CHART, "Each step's critical path by kind", pathKindsData(data), "step", show), { id: "critical-path-kinds" }),
      card(
        "What if",
        [renderTable(whatIfTable(data), { searchable: false }), note("Each change re-schedules the recorded work; the gain is against the mean step.", "note")],
        { id: "critical-path-what-if" },
      ),
    ),
    slot,
  );
  show(0);
}

export const criticalPathPage: ToolPage = { tables: false, render };
