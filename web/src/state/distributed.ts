/**
 * The distributed view's state (tool `distributed`): a run of several hosts read as one
 * run of ranks, from `/api/data?tool=distributed` (the server's reduce of every host's
 * rank tables). The server's registry lists it among its analyses over several profiles
 * (`/api/tools`'s `analyses`), with its unit option, and the menu offers it on every run: a
 * run of several hosts is read by rank, and a single host may hold several devices (a TPU
 * host, an 8-GPU node), which the server says once the host is analysed. The heat map's
 * cells, their colours and the trace viewer address a cell opens are the pure functions
 * here, unit-tested in test/distributed.test.ts.
 */

import type { Distributed, DistributedStep } from "../generated/distributed";
import { hostLabel } from "./names";
import { traceViewerAddress } from "./url";

export const PS_PER_US = 1_000_000;

/** The unit option (`by`, as `stepscope distributed --by`): the server's default, auto, is devices for a run of one profile with several devices, else ranks. */
export const UNIT_OPTION = "by";
export const DEVICE_UNIT = "device";

/** What a unit is called on the page: "rank" or "device". */
export function unitWord(data: Pick<Distributed, "unit">): string {
  return data.unit === DEVICE_UNIT ? "device" : "rank";
}

/** A unit's label on the heat map's axis: the rank number; a device unit's its number, its host where the run has several, and its chip ("5 node1 GPU:1"). */
export function unitLabel(data: Pick<Distributed, "unit" | "ranks">, rank: number): string {
  if (data.unit !== DEVICE_UNIT) return String(rank);
  const row = data.ranks.find((candidate) => candidate.rank === rank);
  if (row === undefined) return String(rank);
  const hosts = new Set(data.ranks.map((candidate) => candidate.host_rank)).size;
  return [String(rank), ...(hosts > 1 ? [hostLabel(row.host)] : []), row.device.replace(/^\/device:/, "")].join(" ");
}

/** What the heat map can show per rank and step: a label and the step row's field (ps). */
export const METRICS = {
  step_time: { label: "Step time", field: "step_time_ps" },
  device_compute: { label: "Compute time", field: "compute_ps" },
  collective_wait: { label: "Collective wait", field: "collective_wait_ps" },
  exposed_collective: { label: "Exposed collective time", field: "exposed_collective_ps" },
} as const satisfies Record<string, { label: string; field: keyof DistributedStep }>;

export type MetricName = keyof typeof METRICS;
export const DEFAULT_METRIC: MetricName = "step_time";

export function isMetric(name: string): name is MetricName {
  return Object.hasOwn(METRICS, name);
}

/** One step's value of the metric, in microseconds. */
export function metricUs(step: DistributedStep, metric: MetricName): number {
  return step[METRICS[metric].field] / PS_PER_US;
}

export interface HeatCell {
  /** The step number and the rank, as the category labels of the axes. */
  x: string;
  y: string;
  rank: number;
  step: number;
  /** The metric, us. */
  v: number;
}

export interface HeatGrid {
  /** Step numbers (x) and units (y: rank numbers, or device labels), ascending, as labels. */
  steps: string[];
  ranks: string[];
  /** What a row is: "rank" or "device". */
  axis: string;
  cells: HeatCell[];
  min: number;
  max: number;
}

/** Every (rank, step) the result has, with the metric's value; a rank missing a step has no cell. */
export function heatGrid(data: Pick<Distributed, "ranks" | "steps" | "unit">, metric: MetricName): HeatGrid {
  const stepNumbers = [...new Set(data.steps.map((step) => step.step))].sort((a, b) => a - b);
  const rankNumbers = data.ranks.map((rank) => rank.rank).sort((a, b) => a - b);
  const cells = data.steps.map((step) => ({ x: String(step.step), y: unitLabel(data, step.rank), rank: step.rank, step: step.step, v: metricUs(step, metric) }));
  const values = cells.map((cell) => cell.v);
  return {
    steps: stepNumbers.map(String),
    ranks: rankNumbers.map((rank) => unitLabel(data, rank)),
    axis: unitWord(data),
    cells,
    min: values.length ? Math.min(...values) : 0,
    max: values.length ? Math.max(...values) : 0,
  };
}

/** The scale's ends: pale (the smallest value) to dark (the largest): "darker is slower". */
export const LOW_RGB = [232, 240, 254] as const;
export const HIGH_RGB = [23, 78, 166] as const;

/** The colour of `value` on the grid's range, linear; all one colour (the low end) when every value is equal. */
export function heatColor(value: number, min: number, max: number): string {
  const t = max > min ? Math.min(1, Math.max(0, (value - min) / (max - min))) : 0;
  const channel = (index: number): number => Math.round(LOW_RGB[index]! + (HIGH_RGB[index]! - LOW_RGB[index]!) * t);
  return `rgb(${channel(0)}, ${channel(1)}, ${channel(2)})`;
}

/**
 * The trace viewer of the rank's host (the run's name for its file) zoomed to the step (a
 * device unit's: its host's, where the device is a track):
 * the step's start on that rank's own timeline to its end; null when the result has no
 * such rank or step.
 */
export function stepTraceAddress(run: string, data: Pick<Distributed, "ranks" | "steps">, rank: number, step: number): string | null {
  const host = data.ranks.find((candidate) => candidate.rank === rank)?.file_host;
  const row = data.steps.find((candidate) => candidate.rank === rank && candidate.step === step);
  if (host === undefined || row === undefined) return null;
  return traceViewerAddress({ run, host }, { start_ps: String(row.trace_start_ps), end_ps: String(row.trace_start_ps + row.step_time_ps) });
}
