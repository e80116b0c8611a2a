/**
 * Chart data built from tool JSON: pure functions (no Chart.js at run time), so the numbers
 * a chart shows can be unit-tested against the tool output and browser tests can compare
 * `chart.data` with the same JSON. Values stay in the JSON's own units (microseconds,
 * bytes); only the axes format them, except the memory timeline's x axis, which is in ms.
 */

import type { FrameworkOpRow, GpuMetrics, IdleRow, InputPipeline, MemoryDevice, OverviewPage } from "../api";
import { formatBytes, formatCount, humanize } from "../format";

/** A dataset as the page builds it; `key` is the JSON key the numbers came from. */
export interface Series {
  label: string;
  key: string;
  data: number[];
  backgroundColor: string | string[];
  borderColor?: string | string[];
  stack?: string;
}

export interface CategoryData {
  labels: (string | number)[];
  datasets: Series[];
}

export interface Point {
  x: number;
  y: number;
}

export interface LineSeries {
  label: string;
  key: string;
  data: Point[];
  borderColor: string;
  backgroundColor: string;
}

/** A step number as an axis label: "1,009" (a string, so Chart.js shows it as written). */
export function stepLabel(step: number): string {
  return formatCount(step);
}

/**
 * One colour per step-time category, fixed so the same category looks the same on every
 * page; device work in blues/greens, host work in warm colours, idle grey.
 */
export const CATEGORY_COLORS: Record<string, string> = {
  device_compute: "#1a73e8",
  device_collectives: "#7e57c2",
  device_to_device: "#00897b",
  host_to_device: "#43a047",
  device_to_host: "#9ccc65",
  input: "#e53935",
  compile: "#8d6e63",
  kernel_launch: "#fb8c00",
  host_compute: "#fdd835",
  idle: "#bdbdbd",
};

/** For pies and anything without a colour of its own; the last one is for "other". */
export const PALETTE = [
  "#1a73e8",
  "#e53935",
  "#43a047",
  "#fb8c00",
  "#8e24aa",
  "#00acc1",
  "#fdd835",
  "#6d4c41",
  "#d81b60",
  "#3949ab",
  "#9e9e9e",
];

export function categoryColor(category: string, index: number): string {
  return CATEGORY_COLORS[category] ?? PALETTE[index % (PALETTE.length - 1)]!;
}

/**
 * The `<category>_us` keys of the steps' breakdowns, in the tool's order (its priority
 * order), over all steps so a category missing from the first step is not lost.
 */
export function breakdownKeys(steps: OverviewPage["steps"]): string[] {
  const keys: string[] = [];
  for (const step of steps) {
    for (const key of Object.keys(step.breakdown)) {
      if (key.endsWith("_us") && !keys.includes(key)) keys.push(key);
    }
  }
  return keys;
}

/** Overview step-time graph: a stacked bar per step, one dataset per breakdown category. */
export function stepTimeData(overview: OverviewPage): CategoryData {
  const keys = breakdownKeys(overview.steps);
  return {
    labels: overview.steps.map((step) => stepLabel(step.step)),
    datasets: keys.map((key, index) => {
      const category = key.replace(/_us$/, "");
      return {
        label: humanize(category),
        key,
        data: overview.steps.map((step) => step.breakdown[key] ?? 0),
        backgroundColor: categoryColor(category, index),
        stack: "step",
      };
    }),
  };
}

/** Input pipeline: per step, the input wait and the rest of the step, stacked. */
export function inputWaitData(pipeline: InputPipeline): CategoryData {
  return {
    labels: pipeline.steps.map((step) => stepLabel(step.step)),
    datasets: [
      {
        label: "Input",
        key: "input_us",
        data: pipeline.steps.map((step) => step.input_us),
        backgroundColor: CATEGORY_COLORS.input!,
        stack: "step",
      },
      {
        label: "Other",
        key: "other_us",
        data: pipeline.steps.map((step) => Math.max(0, step.step_time_us - step.input_us)),
        backgroundColor: CATEGORY_COLORS.device_compute!,
        stack: "step",
      },
    ],
  };
}

/** Input pipeline: the host's input time by category (host_breakdown_us), in the tool's order. */
export function hostBreakdownData(pipeline: InputPipeline): CategoryData {
  const entries = Object.entries(pipeline.host_breakdown_us);
  return {
    labels: entries.map(([key]) => humanize(key)),
    datasets: [
      {
        label: "Host input time",
        key: "host_breakdown_us",
        data: entries.map(([, value]) => value),
        backgroundColor: entries.map((_, index) => PALETTE[index % PALETTE.length]!),
      },
    ],
  };
}

export interface Slice {
  label: string;
  value: number;
}

/**
 * Op types of one side ("Host" / "Device") by summed total_self_time_us, largest first:
 * the top `top` types, then the rest as one "other" slice (only if there is a rest).
 * IDLE rows are not op types and are left out.
 */
export function opTypeSlices(rows: (FrameworkOpRow | IdleRow)[], side: string, top = 10): Slice[] {
  const byType = new Map<string, number>();
  for (const row of rows) {
    if (row.host_or_device !== side || row.type === "IDLE") continue;
    const value = typeof row.total_self_time_us === "number" && Number.isFinite(row.total_self_time_us) ? row.total_self_time_us : 0;
    byType.set(row.type, (byType.get(row.type) ?? 0) + value);
  }
  const sorted = [...byType.entries()]
    .map(([label, value]) => ({ label, value }))
    .sort((a, b) => b.value - a.value || (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
  const head = sorted.slice(0, top);
  const rest = sorted.slice(top);
  if (rest.length > 0)
    head.push({
      label: "other",
      value: rest.reduce((sum, slice) => sum + slice.value, 0),
    });
  return head;
}

export function opTypePieData(rows: FrameworkOpRow[], side: string, top = 10): CategoryData {
  const slices = opTypeSlices(rows, side, top);
  return {
    labels: slices.map((slice) => slice.label),
    datasets: [
      {
        label: `${side} self time (us)`,
        key: "total_self_time_us",
        data: slices.map((slice) => slice.value),
        backgroundColor: sliceColors(slices.map((slice) => slice.label === "other")),
      },
    ],
  };
}

/** A pie's colours: the palette in order, its last (grey) colour for a final "other" slice. */
function sliceColors(isOther: boolean[]): string[] {
  return isOther.map((other, index) => (other && index === isOther.length - 1 ? PALETTE[PALETTE.length - 1]! : PALETTE[index % (PALETTE.length - 1)]!));
}

/**
 * A kernel's name short enough for a legend: C++ kernels carry their whole signature
 * ("void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)", 200+ characters),
 * so the leading "void " and the trailing parameter list go, and what is left is cut at
 * `max` characters. The full names are on the kernel stats page.
 */
export function kernelLabel(name: string, max = 64): string {
  let label = name.startsWith("void ") ? name.slice(5) : name;
  if (label.endsWith(")")) {
    // The parameter list: the parenthesised group the name ends with ("(anonymous
    // namespace)" earlier in the name is left alone).
    let depth = 0;
    for (let index = label.length - 1; index >= 0; index--) {
      const char = label[index];
      if (char === ")") depth++;
      else if (char === "(" && --depth === 0) {
        if (index > 0) label = label.slice(0, index);
        break;
      }
    }
  }
  return label.length > max ? `${label.slice(0, max - 1)}…` : label;
}

/**
 * Overview's top-kernels pie for one GPU: the tool's slices in its order (largest first,
 * then "other"), values in microseconds. Labels are `kernelLabel`s, numbered where two
 * kernels' short labels would read the same.
 */
export function topKernelsPieData(gpu: GpuMetrics): CategoryData {
  const seen = new Map<string, number>();
  const labels = gpu.top_kernels.map((slice) => {
    const label = slice.other ? "other" : kernelLabel(slice.kernel_name);
    const count = (seen.get(label) ?? 0) + 1;
    seen.set(label, count);
    return count > 1 ? `${label} (${count})` : label;
  });
  return {
    labels,
    datasets: [
      {
        label: `Kernel time on ${gpu.device} (us)`,
        key: "total_duration_us",
        data: gpu.top_kernels.map((slice) => slice.total_duration_us),
        backgroundColor: sliceColors(gpu.top_kernels.map((slice) => slice.other)),
      },
    ],
  };
}

/** Memory over time: x in milliseconds from the profile start, y in bytes. */
export function memoryTimelineData(device: MemoryDevice): {
  datasets: LineSeries[];
} {
  const datasets: LineSeries[] = [
    {
      label: "Allocated",
      key: "allocated_bytes",
      data: device.timeline.map((point) => ({
        x: point.time_us / 1000,
        y: point.allocated_bytes,
      })),
      borderColor: "#1a73e8",
      backgroundColor: "rgba(26, 115, 232, 0.15)",
    },
  ];
  if (device.timeline.some((point) => point.reserved_bytes !== null && point.reserved_bytes !== undefined)) {
    datasets.push({
      // XSpace's bytes_reserved is held beside the heap, not inside it (see memory_profile.md).
      label: device.reserved_from === "bytes_reserved" ? "Reserved (beside allocated)" : "Reserved",
      key: "reserved_bytes",
      data: device.timeline.flatMap((point) =>
        point.reserved_bytes === null || point.reserved_bytes === undefined ? [] : [{ x: point.time_us / 1000, y: point.reserved_bytes }],
      ),
      borderColor: "#fb8c00",
      backgroundColor: "rgba(251, 140, 0, 0.1)",
    });
  }
  // The peak, one marked point at its time and value (its label says both).
  datasets.push({
    label: `Peak ${formatBytes(device.peak_allocated_bytes)} at ${(device.peak_time_us / 1000).toFixed(3)} ms`,
    key: "peak",
    data: [{ x: device.peak_time_us / 1000, y: device.peak_allocated_bytes }],
    borderColor: "#d93025",
    backgroundColor: "#d93025",
  });
  return { datasets };
}

/**
 * A tick step for a bytes axis in whole binary units (1, 2, 5, 10... MiB), so the axis
 * reads "4 GiB, 8 GiB" rather than Chart.js's decimal "4.66 GiB, 9.31 GiB".
 */
export function byteTickStep(max: number, maxTicks = 8): number | undefined {
  if (!Number.isFinite(max) || max <= 0) return undefined;
  let unit = 1;
  while (max / unit >= 1024 && unit < 1024 ** 5) unit *= 1024;
  for (const factor of [1, 2, 4, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1024]) {
    const step = factor * unit;
    if (max / step <= maxTicks) return step;
  }
  return undefined;
}
