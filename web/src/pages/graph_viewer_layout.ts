/**
 * graph_viewer's drawing, without the DOM: each node's box and place, and each edge's path,
 * laid out by dagre (layered, operands above their users, as XLA's own graph dumps read),
 * and a node's fill from its share of the program's op time. Kept apart so that the layout
 * and the colour scale are unit-tested in node.
 */

import dagre, { type EdgeLabel, type GraphLabel, type NodeLabel } from "@dagrejs/dagre";
import type { GraphEdge, GraphNode } from "../api";

/** Monospace-ish text widths: the SVG uses a fixed 12px font; 7px a character is its advance. */
export const CHAR_PX = 7;
export const LINE_PX = 16;
export const PAD_PX = 10;
/** Long shapes (tuples) are cut here in the box; the table has them whole. */
export const MAX_CHARS = 48;

export interface PlacedNode {
  name: string;
  lines: string[];
  /** The box's centre and size, in SVG units. */
  x: number;
  y: number;
  width: number;
  height: number;
  fill: string;
  centre: boolean;
}

export interface PlacedEdge {
  source: string;
  target: string;
  points: { x: number; y: number }[];
}

export interface GraphLayout {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  width: number;
  height: number;
}

function cut(text: string): string {
  return text.length > MAX_CHARS ? `${text.slice(0, MAX_CHARS - 3)}...` : text;
}

/** What a node's box says: its name, its opcode (with a fusion's fused count), its shape, its time. */
export function nodeLines(node: GraphNode): string[] {
  const kind = node.fused_instructions === null ? node.opcode : `${node.opcode} (${node.fused_instructions} fused)`;
  const time = node.self_time_percent === null ? "not run" : `${node.self_time_percent.toFixed(1)}% of op time`;
  return [node.name, kind, node.shape, time].map(cut);
}

/**
 * The fill of a node with this share (percent) of the program's op time: white through
 * orange to red in SHARE_STEPS bands, grey for an instruction that never ran on its own.
 */
export const NOT_RUN_FILL = "#e0e0e0";
export const SHARE_STEPS: { atLeast: number; fill: string }[] = [
  { atLeast: 50, fill: "#b71c1c" },
  { atLeast: 20, fill: "#e53935" },
  { atLeast: 10, fill: "#fb8c00" },
  { atLeast: 5, fill: "#ffb74d" },
  { atLeast: 1, fill: "#ffe0b2" },
  { atLeast: 0, fill: "#ffffff" },
];

export function shareFill(share: number | null): string {
  if (share === null) return NOT_RUN_FILL;
  for (const step of SHARE_STEPS) if (share >= step.atLeast) return step.fill;
  return "#ffffff";
}

/** A dark fill takes white text. */
export function textColour(fill: string): string {
  return fill === "#b71c1c" || fill === "#e53935" ? "#ffffff" : "#000000";
}

/** Lays the graph out, top to bottom (operands above users). `centre` is the chosen op. */
export function layoutGraph(nodes: GraphNode[], edges: GraphEdge[], centre: string): GraphLayout {
  const graph = new dagre.graphlib.Graph<GraphLabel, NodeLabel, EdgeLabel>();
  graph.setGraph({ rankdir: "TB", nodesep: 24, ranksep: 40, marginx: 8, marginy: 8 });
  graph.setDefaultEdgeLabel(() => ({}));
  const lines = new Map<string, string[]>();
  for (const node of nodes) {
    const text = nodeLines(node);
    lines.set(node.name, text);
    const width = Math.max(...text.map((line) => line.length)) * CHAR_PX + 2 * PAD_PX;
    graph.setNode(node.name, { width, height: text.length * LINE_PX + PAD_PX });
  }
  for (const edge of edges) graph.setEdge(edge.source, edge.target);
  dagre.layout(graph);
  const placed = nodes.map((node): PlacedNode => {
    const at = graph.node(node.name);
    return {
      name: node.name,
      lines: lines.get(node.name) ?? [],
      x: at.x ?? 0,
      y: at.y ?? 0,
      width: at.width,
      height: at.height,
      fill: shareFill(node.self_time_percent),
      centre: node.name === centre,
    };
  });
  const paths = edges.map((edge): PlacedEdge => ({
    source: edge.source,
    target: edge.target,
    points: (graph.edge(edge.source, edge.target).points ?? []).map((p) => ({ x: p.x, y: p.y })),
  }));
  const size = graph.graph();
  return { nodes: placed, edges: paths, width: size.width ?? 0, height: size.height ?? 0 };
}
