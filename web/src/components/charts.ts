/**
 * Chart.js charts on `<canvas data-chart="name">`. Every chart is registered in
 * `window.__stepscope.charts[name]` so browser tests can read `chart.data` and compare it
 * with the tool JSON; animations are off so tests and screenshots see the final state.
 * Only the Chart.js parts the page uses are registered, which keeps the bundle small.
 */

import {
  ArcElement,
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  DoughnutController,
  Filler,
  Legend,
  LinearScale,
  LogarithmicScale,
  LineController,
  LineElement,
  PieController,
  PointElement,
  ScatterController,
  Tooltip,
  type ChartConfiguration,
  type TooltipItem,
} from "chart.js";
import zoomPlugin from "chartjs-plugin-zoom";
import { el } from "../dom";
import { formatBytes, formatTimeUs } from "../format";
import { byteTickStep, type CategoryData, type LineSeries } from "./chart-data";
import type { RooflineData } from "./roofline-data";

Chart.register(
  ArcElement,
  BarController,
  BarElement,
  CategoryScale,
  DoughnutController,
  Filler,
  Legend,
  LinearScale,
  LogarithmicScale,
  LineController,
  LineElement,
  PieController,
  PointElement,
  ScatterController,
  Tooltip,
  zoomPlugin,
);
Chart.defaults.animation = false;
// The page's own system font stack (style.css): nothing is fetched from the network.
Chart.defaults.font.family =
  'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
Chart.defaults.color = "#3c4043";

/** Any of the page's charts (bar, doughnut, pie and line charts share the registry). */
type AnyChart = Chart;

export interface StepscopeGlobal {
  charts: Record<string, AnyChart>;
  /** The trace viewer's test and benchmark hooks while it is shown (trace/hooks.ts). */
  trace?: unknown;
  /** The flame graph's drawn frames while it is shown (pages/flame_graph.ts). */
  flame?: unknown;
  /** The paired trace view's two viewers' hooks, by name ("base", "new"). */
  traces?: Record<string, unknown>;
}

declare global {
  interface Window {
    __stepscope: StepscopeGlobal;
  }
}

export function chartRegistry(): Record<string, AnyChart> {
  if (!window.__stepscope) window.__stepscope = { charts: {} };
  return window.__stepscope.charts;
}

/** Frees every chart (their canvases are about to leave the page). */
export function destroyCharts(): void {
  const charts = chartRegistry();
  for (const name of Object.keys(charts)) {
    charts[name]?.destroy();
    delete charts[name];
  }
}

/** A sized box holding the canvas (Chart.js sizes itself to its parent). */
function canvasBox(
  name: string,
  label: string,
  tall = false,
): { box: HTMLElement; canvas: HTMLCanvasElement } {
  const canvas = el("canvas", {
    "data-chart": name,
    role: "img",
    "aria-label": label,
  });
  const box = el(
    "div",
    { class: tall ? "chart-box tall" : "chart-box" },
    canvas,
  );
  return { box, canvas };
}

function register(
  name: string,
  canvas: HTMLCanvasElement,
  config: ChartConfiguration,
): AnyChart {
  const charts = chartRegistry();
  charts[name]?.destroy();
  const chart = new Chart(canvas, {
    ...config,
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      ...config.options,
    },
  });
  charts[name] = chart;
  return chart;
}

const usTick = (value: string | number): string => formatTimeUs(Number(value));

/** Hides datasets that are zero everywhere from the legend (they draw nothing anyway). */
function nonEmptyLegendItem(
  item: { datasetIndex?: number },
  data: { datasets: { data: unknown[] }[] },
): boolean {
  const dataset =
    item.datasetIndex === undefined
      ? undefined
      : data.datasets[item.datasetIndex];
  return (
    !dataset ||
    dataset.data.some((value) => typeof value === "number" && value !== 0)
  );
}

/** Stacked bars per step, values in microseconds. */
/** `onBarClick(index)`: a click on the bar of label `index` (the chart shows a hand cursor over bars). */
export function stackedBarChart(
  name: string,
  label: string,
  data: CategoryData,
  xTitle = "step",
  onBarClick?: (index: number) => void,
): HTMLElement {
  const { box, canvas } = canvasBox(name, label);
  register(name, canvas, {
    type: "bar",
    data,
    options: {
      onClick:
        onBarClick &&
        ((_event, elements) => elements[0] && onBarClick(elements[0].index)),
      onHover:
        onBarClick &&
        ((_event, elements) =>
          canvas.style.setProperty(
            "cursor",
            elements.length > 0 ? "pointer" : "default",
          )),
      scales: {
        x: { stacked: true, title: { display: true, text: xTitle } },
        y: {
          stacked: true,
          beginAtZero: true,
          ticks: { callback: usTick },
          title: { display: true, text: "time" },
        },
      },
      plugins: {
        legend: {
          position: "bottom",
          labels: { filter: nonEmptyLegendItem, boxWidth: 12 },
        },
        tooltip: {
          callbacks: {
            label: (item: TooltipItem<"bar">) =>
              `${item.dataset.label}: ${formatTimeUs(item.parsed.y)}`,
          },
        },
      },
    },
  });
  return box;
}

/** Values in microseconds by category: a doughnut with a legend and time tooltips. */
export function doughnutChart(
  name: string,
  label: string,
  data: CategoryData,
  type: "doughnut" | "pie" = "doughnut",
): HTMLElement {
  const { box, canvas } = canvasBox(name, label);
  register(name, canvas, {
    type,
    data,
    options: {
      plugins: {
        legend: { position: "right", labels: { boxWidth: 12 } },
        tooltip: {
          callbacks: {
            label: (item: TooltipItem<"doughnut">) => {
              const values = item.dataset.data;
              const total = values.reduce((sum, value) => sum + value, 0);
              const share =
                total > 0
                  ? ` (${((100 * Number(item.raw)) / total).toFixed(1)}%)`
                  : "";
              return `${item.label}: ${formatTimeUs(Number(item.raw))}${share}`;
            },
          },
        },
      },
    },
  });
  return box;
}

/** A time range on a chart's x axis (ms for the memory chart). */
export interface XRange {
  start_ms: number;
  end_ms: number;
}

/** A memory series as both memory charts draw it: the `peak` series a marker (one point,
 * no line), the others stepped (a point is the level just after an event, held until the
 * next one), filled where `fill`. */
function memorySeries(series: LineSeries, fill: boolean) {
  return series.key === "peak"
    ? {
        ...series,
        fill: false,
        showLine: false,
        pointRadius: 6,
        pointHoverRadius: 8,
        pointStyle: "triangle" as const,
        order: -1,
      }
    : {
        ...series,
        fill,
        pointRadius: 0,
        borderWidth: 1.5,
        stepped: "after" as const,
      };
}

/** The memory charts' y axis: bytes from 0, ticks at round byte steps up to the top value. */
function bytesAxis(datasets: LineSeries[]) {
  const top = Math.max(
    0,
    ...datasets.flatMap((series) => series.data.map((point) => point.y)),
  );
  return {
    beginAtZero: true,
    ticks: {
      stepSize: byteTickStep(top),
      callback: (value: string | number) => formatBytes(Number(value)),
    },
    title: { display: true, text: "memory" },
  };
}

/**
 * Memory over time: a line chart on a linear x axis in ms, bytes on y. Dragging across it
 * zooms into that time range (chartjs-plugin-zoom's drag zoom; ctrl + wheel zooms too,
 * shift + drag pans); `onRange` gets the range shown after each zoom or pan.
 */
export function memoryLineChart(
  name: string,
  label: string,
  data: { datasets: LineSeries[] },
  onRange?: (range: XRange) => void,
): HTMLElement {
  const { box, canvas } = canvasBox(name, label, true);
  register(name, canvas, {
    type: "line",
    data: {
      datasets: data.datasets.map((series) =>
        memorySeries(series, series.key === "allocated_bytes"),
      ),
    },
    options: {
      parsing: false,
      normalized: true,
      interaction: { mode: "nearest", intersect: false, axis: "x" },
      scales: {
        x: { type: "linear", title: { display: true, text: "time (ms)" } },
        y: bytesAxis(data.datasets),
      },
      plugins: {
        zoom: {
          limits: { x: { min: "original", max: "original" } },
          zoom: {
            drag: {
              enabled: true,
              backgroundColor: "rgba(26, 115, 232, 0.15)",
              borderColor: "#1a73e8",
              borderWidth: 1,
            },
            wheel: { enabled: true, modifierKey: "ctrl" },
            mode: "x",
            onZoomComplete: ({ chart }) =>
              onRange?.({
                start_ms: chart.scales.x!.min,
                end_ms: chart.scales.x!.max,
              }),
          },
          pan: {
            enabled: true,
            mode: "x",
            modifierKey: "shift",
            onPanComplete: ({ chart }) =>
              onRange?.({
                start_ms: chart.scales.x!.min,
                end_ms: chart.scales.x!.max,
              }),
          },
        },
        legend: { position: "bottom", labels: { boxWidth: 12 } },
        tooltip: {
          callbacks: {
            title: (items: TooltipItem<"line">[]) =>
              items[0] ? `${(items[0].parsed.x ?? 0).toFixed(3)} ms` : "",
            label: (item: TooltipItem<"line">) =>
              `${item.dataset.label}: ${formatBytes(item.parsed.y)}`,
          },
        },
      },
    },
  });
  return box;
}

/**
 * Memory over a program's order (memory_viewer): x is an event index, not time; bytes on
 * y; the series holds each level until the next event and the `peak` series is a marker.
 */
export function sequenceLineChart(
  name: string,
  label: string,
  xTitle: string,
  data: { datasets: LineSeries[] },
): HTMLElement {
  const { box, canvas } = canvasBox(name, label, true);
  register(name, canvas, {
    type: "line",
    data: {
      datasets: data.datasets.map((series) => memorySeries(series, true)),
    },
    options: {
      parsing: false,
      normalized: true,
      interaction: { mode: "nearest", intersect: false, axis: "x" },
      scales: {
        x: { type: "linear", title: { display: true, text: xTitle } },
        y: bytesAxis(data.datasets),
      },
      plugins: {
        legend: { position: "bottom", labels: { boxWidth: 12 } },
        tooltip: {
          callbacks: {
            title: (items: TooltipItem<"line">[]) =>
              items[0] ? `${xTitle} ${items[0].parsed.x ?? 0}` : "",
            label: (item: TooltipItem<"line">) =>
              `${item.dataset.label}: ${formatBytes(item.parsed.y)}`,
          },
        },
      },
    },
  });
  return box;
}

/** Back to the whole x axis of a chart zoomed by the zoom plugin. */
export function resetChartZoom(name: string): void {
  chartRegistry()[name]?.resetZoom();
}

/** Two runs' step times side by side (us), one bar dataset each: the compare view's chart. */
export function pairedStepChart(
  name: string,
  label: string,
  data: {
    labels: string[];
    datasets: {
      label: string;
      key: string;
      data: (number | null)[];
      backgroundColor: string;
    }[];
  },
): HTMLElement {
  const { box, canvas } = canvasBox(name, label);
  register(name, canvas, {
    type: "bar",
    data,
    options: {
      scales: {
        x: { title: { display: true, text: "step (base / new)" } },
        y: {
          beginAtZero: true,
          ticks: { callback: usTick },
          title: { display: true, text: "step time" },
        },
      },
      plugins: {
        legend: { position: "bottom", labels: { boxWidth: 12 } },
        tooltip: {
          callbacks: {
            label: (item: TooltipItem<"bar">) =>
              `${item.dataset.label}: ${formatTimeUs(item.parsed.y)}`,
          },
        },
      },
    },
  });
  return box;
}

/** Two runs' step-time histograms on shared bins (counts), one bar dataset each: the compare view's distribution chart. */
export function histogramChart(
  name: string,
  label: string,
  data: {
    labels: string[];
    datasets: {
      label: string;
      key: string;
      data: number[];
      backgroundColor: string;
    }[];
  },
): HTMLElement {
  const { box, canvas } = canvasBox(name, label);
  register(name, canvas, {
    type: "bar",
    data,
    options: {
      // Grouped bars, touching within a bin: the bins are what is compared.
      datasets: { bar: { categoryPercentage: 0.9, barPercentage: 1 } },
      scales: {
        x: {
          title: {
            display: true,
            text: "step time (bins shared by both runs)",
          },
        },
        y: {
          beginAtZero: true,
          ticks: { precision: 0 },
          title: { display: true, text: "steps" },
        },
      },
      plugins: {
        legend: { position: "bottom", labels: { boxWidth: 12 } },
        tooltip: {
          callbacks: {
            label: (item: TooltipItem<"bar">) =>
              `${item.dataset.label}: ${item.parsed.y} step${item.parsed.y === 1 ? "" : "s"}`,
          },
        },
      },
    },
  });
  return box;
}

/**
 * The roofline: ops as points on log-log axes (FLOP/byte, GFLOP/s), the memory and compute
 * roofs as lines. Dataset 0 is the ops (`data` in the JSON's order), 1 and 2 the roofs.
 */
export function rooflineChart(
  name: string,
  label: string,
  data: RooflineData,
): HTMLElement {
  const { box, canvas } = canvasBox(name, label, true);
  register(name, canvas, {
    type: "scatter",
    data: {
      datasets: [
        {
          label: "ops",
          data: data.points,
          backgroundColor: "rgba(26, 115, 232, 0.6)",
          pointRadius: 4,
        },
        {
          label: "memory roof",
          data: data.memory,
          showLine: true,
          pointRadius: 0,
          borderColor: "#d93025",
          borderWidth: 2,
        },
        {
          label: "compute roof",
          data: data.compute,
          showLine: true,
          pointRadius: 0,
          borderColor: "#188038",
          borderWidth: 2,
        },
      ],
    },
    options: {
      scales: {
        x: {
          type: "logarithmic",
          title: { display: true, text: "operational intensity (FLOP/byte)" },
        },
        y: {
          type: "logarithmic",
          title: { display: true, text: "achieved GFLOP/s" },
        },
      },
      plugins: {
        legend: { position: "bottom", labels: { boxWidth: 12 } },
        tooltip: {
          callbacks: {
            label: (item: TooltipItem<"scatter">) => {
              const point = data.points[item.dataIndex];
              const where = `${item.parsed.x?.toPrecision(3)} FLOP/byte, ${item.parsed.y?.toPrecision(3)} GFLOP/s`;
              return item.datasetIndex === 0 && point
                ? `${point.name}: ${where}`
                : `${item.dataset.label}: ${where}`;
            },
          },
        },
      },
    },
  });
  return box;
}
