/**
 * flame_graph: the tool's call-path tree drawn as an icicle on a canvas (the root on top,
 * callees below, width = total time), frames coloured by category. Hovering a frame shows
 * its name, total and self time; clicking one zooms into it (it becomes the full width),
 * clicking a frame above it zooms back out. The step, thread and window are the tool's
 * options (the options bar: the step select is the step selector). The layout is
 * `components/icicle` (DOM-free, unit-tested); the drawn rectangles are exposed as
 * `window.__stepscope.flame` so browser tests can click and hover by frame.
 */

import { flameUrl, type FlameGraph, type FlameNode } from "../api";
import { categoryColor, icicleLayout, rectAt, type IcicleNode, type IcicleRect } from "../components/icicle";
import { chartRegistry } from "../components/charts";
import { at, card, metric, metrics, note } from "../components/metric";
import { el } from "../dom";
import { formatPercent, formatTimeUs } from "../format";
import { add, grid } from "./common";
import type { PageContext, ToolPage } from "./types";

const ROW_PX = 20;
const TEXT_MIN_PX = 24;
const FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';

/** What a browser test reads: the rectangles drawn (CSS px) and the zoomed-into frame. */
export interface FlameHooks {
  rects: { path: string[]; x: number; width: number; depth: number; total_ps: number; self_ps: number }[];
  focus: string[];
  rowHeight: number;
}

/** The hover line: name, total and self time, total as a share of the root's. */
export function hoverText(node: IcicleNode, root: IcicleNode): string {
  const share = root.total_ps > 0 ? (100 * node.total_ps) / root.total_ps : 0;
  return `${node.name}: total ${formatTimeUs(node.total_ps / 1e6)} (${formatPercent(share)} of ${root.name}), self ${formatTimeUs(node.self_ps / 1e6)}`;
}

/** The text that fits in `width` px: the whole name, or its start and an ellipsis. */
function fitted(context: CanvasRenderingContext2D, text: string, width: number): string {
  if (context.measureText(text).width <= width) return text;
  let keep = Math.floor((text.length * width) / context.measureText(text).width);
  while (keep > 0 && context.measureText(`${text.slice(0, keep)}…`).width > width) keep--;
  return keep > 0 ? `${text.slice(0, keep)}…` : "";
}

/** Links to this window's stacks as files (`stepscope flame`'s formats, from `/api/flame`). */
function downloads(context: PageContext): HTMLElement {
  return el("p", { class: "note", id: "flame-download" }, [
    "Download these stacks: ",
    el("a", { href: flameUrl(context.selection, "collapsed"), download: "", id: "flame-download-collapsed", title: "thread;frame;frame <ns> per line (flamegraph.pl, speedscope, Perfetto)" }, "collapsed"),
    " · ",
    el("a", { href: flameUrl(context.selection, "speedscope"), download: "", id: "flame-download-speedscope", title: "speedscope's own format, one timeline per thread" }, "speedscope"),
  ]);
}

function render(root: HTMLElement, context: PageContext): void {
  const data = context.data as FlameGraph;
  const layout = grid(root);
  add(
    layout,
    card(
      "Flame graph",
      [
        metrics([
          metric("root", data.root.name, "Threads"),
          metric("window_us", (data.end_ps - data.start_ps) / 1e6, data.step === "" ? "Window" : `Step ${data.step}`),
          metric("start_us", data.start_ps / 1e6, "From"),
          metric("busy_us", at(data, "busy_us"), "Busy (frames' self time)"),
        ]),
        data.busy_ps === 0 ? null : downloads(context),
      ],
      { id: "flame-summary" },
      true,
    ),
  );
  if (data.busy_ps === 0) {
    add(layout, card("Stacks", note("Nothing ran on these threads in this window: no stacks to draw. Pick another step or thread.", "note", { id: "no-stacks" }), { id: "flame-card" }, true));
    return;
  }

  const canvas = el("canvas", { "data-chart": "flame_graph", role: "img", "aria-label": "Flame graph (icicle)" });
  const hover = el("div", { id: "flame-hover", class: "flame-hover", "aria-live": "polite" }, "Hover a frame for its times; click to zoom.");
  const crumbs = el("div", { id: "flame-focus", class: "flame-focus" });
  const legend = el("div", { class: "legend flame-legend" });
  const categories = new Set<string>();
  const walk = (node: FlameNode): void => {
    categories.add(node.category);
    node.children.forEach(walk);
  };
  walk(data.root);
  for (const category of [...categories].sort()) {
    legend.append(el("span", { class: "swatch", style: `background: ${categoryColor(category)}` }), ` ${category} `);
  }
  const box = el("div", { class: "flame-box" }, canvas);
  add(layout, card("Stacks", [crumbs, box, hover, legend], { id: "flame-card" }, true));

  let focus = [data.root.name];
  let rects: IcicleRect[] = [];

  function draw(): void {
    const width = Math.max(1, box.clientWidth);
    rects = icicleLayout(data.root, focus, width);
    const rows = 1 + Math.max(...rects.map((rect) => rect.depth));
    const ratio = window.devicePixelRatio || 1;
    canvas.style.width = `${width}px`;
    canvas.style.height = `${rows * ROW_PX}px`;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(rows * ROW_PX * ratio);
    const pen = canvas.getContext("2d");
    if (!pen) return;
    pen.setTransform(ratio, 0, 0, ratio, 0, 0);
    pen.clearRect(0, 0, width, rows * ROW_PX);
    pen.font = FONT;
    pen.textBaseline = "middle";
    for (const rect of rects) {
      const y = rect.depth * ROW_PX;
      const above = rect.depth < focus.length - 1;
      pen.globalAlpha = above ? 0.55 : 1;
      pen.fillStyle = categoryColor(rect.node.category);
      pen.fillRect(rect.x, y, Math.max(rect.width - 1, 0.5), ROW_PX - 1);
      if (rect.width >= TEXT_MIN_PX) {
        pen.fillStyle = "#1f2328";
        pen.fillText(fitted(pen, rect.node.name, rect.width - 6), rect.x + 3, y + ROW_PX / 2);
      }
    }
    pen.globalAlpha = 1;
    crumbs.replaceChildren(
      ...focus.flatMap((name, depth) => [
        depth > 0 ? " › " : "",
        el("button", { type: "button", class: "link-button", "data-depth": depth, onclick: () => zoom(focus.slice(0, depth + 1)) }, name),
      ]),
    );
    const hooks: FlameHooks = {
      rects: rects.map((rect) => ({ path: rect.path, x: rect.x, width: rect.width, depth: rect.depth, total_ps: rect.node.total_ps, self_ps: rect.node.self_ps })),
      focus,
      rowHeight: ROW_PX,
    };
    chartRegistry();
    window.__stepscope.flame = hooks;
  }

  function zoom(path: string[]): void {
    focus = path;
    draw();
  }

  function under(event: MouseEvent): IcicleRect | null {
    const bounds = canvas.getBoundingClientRect();
    return rectAt(rects, event.clientX - bounds.left, Math.floor((event.clientY - bounds.top) / ROW_PX));
  }

  canvas.addEventListener("mousemove", (event) => {
    const rect = under(event);
    canvas.style.cursor = rect ? "pointer" : "default";
    if (!rect) return;
    const node = rect.node;
    hover.replaceChildren(
      el("span", { "data-frame": rect.path.join(";"), "data-total-ps": String(node.total_ps), "data-self-ps": String(node.self_ps) }, hoverText(node, data.root)),
    );
  });
  canvas.addEventListener("click", (event) => {
    const rect = under(event);
    if (rect) zoom(rect.path);
  });
  draw();
}

export const flameGraphPage: ToolPage = { tables: false, render };
