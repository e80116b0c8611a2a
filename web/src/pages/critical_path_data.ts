/**
 * The critical_path page's figures, without the DOM: the stacked bar of each step's path
 * by kind, the what-if rows with their gain against the mean step, the top ops of one
 * step, and which step a time lies in (the trace viewer's overlay picks its step so).
 * Times stay in the JSON's picoseconds except the chart's, which are microseconds (the
 * charts' unit).
 */

import type { ApiTable, CriticalPath, StepPath } from "../api";
import { PALETTE, stepLabel, type CategoryData } from "../components/chart-data";
import { humanize } from "../format";

const PS_PER_US = 1e6;

/** One colour per kind of path time, in the overview's palette where the meaning is the same. */
export const KIND_COLORS: Record<string, string> = {
  host_compute: "#fdd835",
  launch: "#fb8c00",
  kernel: "#1a73e8",
  copy: "#43a047",
  collective: "#7e57c2",
  input: "#e53935",
  sync: "#8d6e63",
  idle: "#bdbdbd",
};

export function kindColor(kind: string, index: number): string {
  return KIND_COLORS[kind] ?? PALETTE[index % (PALETTE.length - 1)]!;
}

/** A stacked bar per step, one dataset per kind (the tool's `kinds` order), in microseconds. */
export function pathKindsData(data: CriticalPath): CategoryData {
  return {
    labels: data.steps.map((step) => stepLabel(step.step)),
    datasets: data.kinds.map((kind, index) => ({
      label: humanize(kind),
      key: kind,
      data: data.steps.map((step) => (step.by_kind_ps[kind] ?? 0) / PS_PER_US),
      backgroundColor: kindColor(kind, index),
      stack: "step",
    })),
  };
}

/** The gain of a predicted step against the mean step, in percent (positive: shorter). */
export function gainPercent(mean_ps: number, predicted_ps: number): number {
  return mean_ps > 0 ? (100 * (mean_ps - predicted_ps)) / mean_ps : 0;
}

/** The what-if table: each change, the predicted mean step and its gain over the measured one. */
export function whatIfTable(data: CriticalPath): ApiTable {
  return {
    name: "what_if",
    columns: [
      { key: "description", label: "What if", kind: "string" },
      { key: "predicted_step_ps", label: "Predicted step", kind: "number" },
      { key: "gain_percent", label: "Gain", kind: "number" },
      { key: "change", label: "Change", kind: "string" },
    ],
    rows: data.what_if.map((change) => [change.description, change.predicted_step_ps, gainPercent(data.mean_step_ps, change.predicted_step_ps), change.change]),
  };
}

/** The ops and kernels on one step's path, largest first (the tool's `top`). */
export function topTable(step: StepPath): ApiTable {
  return {
    name: "top",
    columns: [
      { key: "name", label: "Op or kernel", kind: "string" },
      { key: "kind", label: "Kind", kind: "string" },
      { key: "time_ps", label: "Time on the path", kind: "number" },
      { key: "share_percent", label: "Share of the step", kind: "number" },
    ],
    rows: step.top.map((op) => [op.name, op.kind, op.ps, step.duration_ps > 0 ? (100 * op.ps) / step.duration_ps : 0]),
  };
}

/**
 * The index of the step holding time `t_ps` (profile time), else the step nearest it;
 * -1 without steps.
 */
export function stepAt(steps: readonly Pick<StepPath, "start_ps" | "duration_ps">[], t_ps: number): number {
  let best = -1;
  let bestDistance = Infinity;
  steps.forEach((step, index) => {
    const end = step.start_ps + step.duration_ps;
    const distance = t_ps < step.start_ps ? step.start_ps - t_ps : t_ps > end ? t_ps - end : 0;
    if (distance < bestDistance) {
      best = index;
      bestDistance = distance;
    }
  });
  return best;
}
