/**
 * The charts of the self-contained HTML report (`stepscope report --format html`).
 *
 * Python writes the report's sections as HTML, with a `<canvas data-chart="name">` where a
 * chart goes and the charts' data as JSON in `<script id="stepscope-report-data">`; this
 * script, built by Vite into one IIFE file that Python inlines into the page, draws them with
 * the dashboard's Chart.js and its own chart-data functions, so a chart in the report shows
 * the same series as on the dashboard. Nothing is fetched: the page works from file://.
 * Like the dashboard, every chart is registered in `window.__stepscope.charts[name]` (browser
 * tests read `chart.data`) and animations are off; `<body data-state="ready">` says all are drawn.
 */

import { ArcElement, BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, PieController, Tooltip, type ChartConfiguration, type TooltipItem } from "chart.js";
import type { GpuMetrics, OverviewPage } from "../src/api";
import { stepTimeData, topKernelsPieData } from "../src/components/chart-data";
import { formatTimeUs } from "../src/format";

Chart.register(ArcElement, BarController, BarElement, CategoryScale, Legend, LinearScale, PieController, Tooltip);
Chart.defaults.animation = false;
Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
Chart.defaults.color = "#3c4043";

export const DATA_ID = "stepscope-report-data";

/** A chart as Python describes it: the canvas's name, the kind (KINDS), the tool JSON it reads. */
export interface ChartSpec {
  name: string;
  kind: string;
  data: unknown;
}

const usTick = (value: string | number): string => formatTimeUs(Number(value));

/** A category that is zero in every step draws nothing: the legend leaves it out too. */
const drawn = (item: { datasetIndex?: number }, data: { datasets: { data: unknown[] }[] }): boolean =>
  item.datasetIndex === undefined || (data.datasets[item.datasetIndex]?.data ?? []).some((value) => value !== 0);

/** What each kind of chart is drawn from. The step-time data holds the overview's steps with
 * their number and `<category>_us` breakdown only: what `stepTimeData` reads. */
export const KINDS: Record<string, (data: unknown) => ChartConfiguration> = {
  step_time: (data) => ({
    type: "bar",
    data: stepTimeData(data as OverviewPage),
    options: {
      scales: {
        x: { stacked: true, title: { display: true, text: "step" } },
        y: { stacked: true, beginAtZero: true, ticks: { callback: usTick }, title: { display: true, text: "time" } },
      },
      plugins: {
        legend: { position: "bottom", labels: { boxWidth: 12, filter: drawn } },
        tooltip: { callbacks: { label: (item: TooltipItem<"bar">) => `${item.dataset.label}: ${formatTimeUs(item.parsed.y)}` } },
      },
    },
  }),
  top_kernels: (data) => ({
    type: "pie",
    data: topKernelsPieData(data as GpuMetrics),
    options: {
      plugins: {
        legend: { position: "right", labels: { boxWidth: 12 } },
        tooltip: { callbacks: { label: (item: TooltipItem<"pie">) => `${item.label}: ${formatTimeUs(Number(item.raw))}` } },
      },
    },
  }),
};

function draw(): void {
  const source = document.getElementById(DATA_ID);
  const specs = source?.textContent ? (JSON.parse(source.textContent) as { charts: ChartSpec[] }).charts : [];
  window.__stepscope = { charts: {} };
  for (const spec of specs) {
    const canvas = document.querySelector<HTMLCanvasElement>(`canvas[data-chart="${spec.name}"]`);
    const build = KINDS[spec.kind];
    if (!canvas || !build) continue;
    const config = build(spec.data);
    window.__stepscope.charts[spec.name] = new Chart(canvas, { ...config, options: { animation: false, responsive: true, maintainAspectRatio: false, ...config.options } });
  }
  document.body.dataset.state = "ready";
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", draw);
else draw();
