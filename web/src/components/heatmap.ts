/**
 * A heat map (rank x step) on `<canvas data-chart="name">`: Chart.js has no heat-map type,
 * so this uses chartjs-chart-matrix, the plugin kept beside Chart.js itself, with category
 * axes (steps across, ranks down). Registered in `window.__stepscope.charts[name]` like
 * every chart of the page, so browser tests read the cells from `chart.data`.
 */

import { CategoryScale, Chart, Tooltip, type TooltipItem } from "chart.js";
import { MatrixController, MatrixElement } from "chartjs-chart-matrix";
import { el } from "../dom";
import { formatTimeUs } from "../format";
import { heatColor, type HeatCell, type HeatGrid } from "../state/distributed";
import { chartRegistry } from "./charts";

Chart.register(MatrixController, MatrixElement, CategoryScale, Tooltip);

/** Each rank's row is this tall (CSS px) until the box reaches its cap, then they share it. */
const ROW_PX = 28;
const AXES_PX = 70;
const MAX_PX = 720;
const GAP_PX = 1;

/** `onCellClick(cell)`: a click on a cell (the cursor is a hand over cells). */
export function heatmapChart(name: string, label: string, grid: HeatGrid, valueLabel: string, onCellClick?: (cell: HeatCell) => void): HTMLElement {
  const canvas = el("canvas", { "data-chart": name, role: "img", "aria-label": label });
  const height = Math.min(MAX_PX, AXES_PX + ROW_PX * Math.max(1, grid.ranks.length));
  const box = el("div", { class: "chart-box heatmap-box", style: `height: ${height}px` }, canvas);
  const charts = chartRegistry();
  charts[name]?.destroy();
  const chart = new Chart<"matrix", HeatCell[]>(canvas, {
    type: "matrix",
    data: {
      datasets: [
        {
          label: valueLabel,
          data: grid.cells,
          backgroundColor: (context) => heatColor((context.raw as HeatCell | undefined)?.v ?? grid.min, grid.min, grid.max),
          borderWidth: 0,
          width: ({ chart: drawn }) => Math.max(1, (drawn.chartArea?.width ?? 0) / Math.max(1, grid.steps.length) - GAP_PX),
          height: ({ chart: drawn }) => Math.max(1, (drawn.chartArea?.height ?? 0) / Math.max(1, grid.ranks.length) - GAP_PX),
        },
      ],
    },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      onClick: onCellClick && ((_event, elements) => elements[0] && onCellClick(grid.cells[elements[0].index]!)),
      onHover: onCellClick && ((_event, elements) => canvas.style.setProperty("cursor", elements.length > 0 ? "pointer" : "default")),
      scales: {
        x: { type: "category", labels: grid.steps, offset: true, grid: { display: false }, title: { display: true, text: "step" } },
        y: { type: "category", labels: grid.ranks, offset: true, reverse: false, grid: { display: false }, title: { display: true, text: grid.axis } },
      },
      plugins: {
        legend: { display: false },
        tooltip: {
          callbacks: {
            title: () => "",
            label: (item: TooltipItem<"matrix">) => {
              const cell = item.raw as HeatCell;
              return `${grid.axis} ${cell.y}, step ${cell.step}: ${valueLabel.toLowerCase()} ${formatTimeUs(cell.v)}`;
            },
          },
        },
      },
    },
  });
  charts[name] = chart;
  return box;
}

/** The colour scale's legend: its two ends and their values. */
export function heatLegend(grid: HeatGrid): HTMLElement {
  const stops = [0, 0.25, 0.5, 0.75, 1].map((t) => heatColor(grid.min + t * (grid.max - grid.min), grid.min, grid.max));
  return el("div", { class: "heat-legend", "data-legend": "heatmap" }, [
    el("span", { "data-end": "low", "data-value": String(grid.min) }, formatTimeUs(grid.min)),
    el("span", { class: "heat-ramp", style: `background: linear-gradient(to right, ${stops.join(", ")})` }),
    el("span", { "data-end": "high", "data-value": String(grid.max) }, formatTimeUs(grid.max)),
  ]);
}
