/**
 * graph_viewer: the HLO graph of one program around one op (the `op` option; `hops` out),
 * drawn as SVG from graph_viewer_layout's dagre layout, each node filled by its share of the
 * program's op time (a legend says the bands). Clicking a node re-centres the graph on it
 * (the `op` option in the address, a new history entry); the options bar picks the
 * program, op and hops; the table lists the nodes.
 */

import type { GraphViewer } from "../api";
import { at, card, metric, metrics, note } from "../components/metric";
import { el } from "../dom";
import { add, grid, tableCard } from "./common";
import { LINE_PX, NOT_RUN_FILL, SHARE_STEPS, layoutGraph, textColour, type GraphLayout, type PlacedNode } from "./graph_viewer_layout";
import type { PageContext, ToolPage } from "./types";

const SVG = "http://www.w3.org/2000/svg";
/** Hidden until asked for (so that the rest fit 1280 px): the inclusive time, equal to the self time shown (an XLA op does not nest). */
export const GRAPH_LEAST_READ = ["total_time_us"] as const;

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, children: (SVGElement | string)[] = []): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  for (const child of children) node.append(child);
  return node;
}

function nodeGroup(node: PlacedNode, recentre: ((name: string) => void) | undefined): SVGGElement {
  const left = node.x - node.width / 2;
  const top = node.y - node.height / 2;
  const colour = textColour(node.fill);
  const texts = node.lines.map((line, i) =>
    svg("text", { x: node.x, y: top + LINE_PX * (i + 1), "text-anchor": "middle", fill: colour, "font-weight": i === 0 ? "bold" : "normal" }, [line]),
  );
  const box = svg("rect", { x: left, y: top, width: node.width, height: node.height, rx: 4, fill: node.fill, stroke: node.centre ? "#1565c0" : "#616161", "stroke-width": node.centre ? 3 : 1 });
  const group = svg("g", { class: "graph-node", "data-node": node.name, "data-centre": String(node.centre), role: "button", tabindex: 0 }, [svg("title", {}, [node.name]), box, ...texts]);
  if (recentre && !node.centre) {
    group.style.cursor = "pointer";
    group.addEventListener("click", () => recentre(node.name));
    group.addEventListener("keydown", (event) => {
      if (event.key === "Enter") recentre(node.name);
    });
  }
  return group;
}

function drawing(layout: GraphLayout, recentre: ((name: string) => void) | undefined): SVGSVGElement {
  const arrow = svg("marker", { id: "graph-arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse" }, [
    svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#616161" }),
  ]);
  const edges = layout.edges.map((edge) =>
    svg("polyline", {
      class: "graph-edge",
      "data-source": edge.source,
      "data-target": edge.target,
      points: edge.points.map((p) => `${p.x},${p.y}`).join(" "),
      fill: "none",
      stroke: "#616161",
      "marker-end": "url(#graph-arrow)",
    }),
  );
  return svg(
    "svg",
    { id: "graph-svg", width: layout.width, height: layout.height, viewBox: `0 0 ${layout.width} ${layout.height}`, "font-size": 12, "font-family": "monospace" },
    [svg("defs", {}, [arrow]), ...edges, ...layout.nodes.map((node) => nodeGroup(node, recentre))],
  );
}

function legend(): HTMLElement {
  const swatch = (fill: string, label: string): HTMLElement =>
    el("span", { class: "graph-legend-item" }, [el("span", { class: "graph-swatch", style: `background:${fill};border:1px solid #616161;display:inline-block;width:14px;height:14px;margin:0 4px -2px 8px` }), label]);
  const bands = SHARE_STEPS.map((step, i) => swatch(step.fill, i === 0 ? `≥ ${step.atLeast}%` : `${step.atLeast}–${SHARE_STEPS[i - 1]?.atLeast ?? 100}%`));
  return el("div", { id: "graph-legend", class: "graph-legend" }, ["Self time, share of the program's op time:", ...bands, swatch(NOT_RUN_FILL, "not run as an op")]);
}

function render(root: HTMLElement, context: PageContext): void {
  const data = context.data as GraphViewer;
  const layout = grid(root);
  if (!data.program) {
    add(layout, card("Graph viewer", note("No XLA programs with an HLO proto in this profile (JAX, TensorFlow and TPU profiles carry them).", "note", { id: "graph-viewer-note" }), { id: "graph-viewer-empty" }, true));
    return;
  }
  const setOptions = context.setOptions;
  const recentre = setOptions ? (name: string): void => setOptions({ ...context.selection.options, program: data.program, op: name }) : undefined;
  const placed = layoutGraph(data.nodes, data.edges, data.op);
  add(
    layout,
    card(
      `${data.program}: ${data.op}`,
      [
        metrics([
          metric("nodes", data.nodes.length, "Instructions shown"),
          metric("edges", data.edges.length, "Edges"),
          metric("hops", at(data, "hops"), "Hops"),
          metric("computation", data.computation, "Computation"),
        ]),
        legend(),
        el("div", { class: "graph-scroll", style: "overflow:auto;max-height:80vh" }, [drawing(placed, recentre)]),
        note("Operands above their users. Click an instruction to centre the graph on it; a fusion is one node (its fused instructions run as it).", "note"),
      ],
      { id: "graph-viewer", "data-program": data.program, "data-op": data.op },
      true,
    ),
    tableCard(context, "nodes", "Instructions", { leastRead: GRAPH_LEAST_READ }),
  );
}

export const graphViewerPage: ToolPage = { tables: true, render };
