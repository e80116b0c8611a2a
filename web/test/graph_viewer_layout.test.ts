import { describe, expect, it } from "vitest";
import type { GraphEdge, GraphNode } from "../src/api";
import { CHAR_PX, LINE_PX, MAX_CHARS, NOT_RUN_FILL, PAD_PX, layoutGraph, nodeLines, shareFill, textColour } from "../src/pages/graph_viewer_layout";

function node(name: string, share: number | null, extra: Partial<GraphNode> = {}): GraphNode {
  return {
    id: 0,
    name,
    opcode: "add",
    shape: "f32[8]{0}",
    distance: 0,
    operands: 0,
    users: 0,
    fused_instructions: null,
    called_computations: [],
    op_name: "",
    category: share === null ? null : "add",
    occurrences: share === null ? null : 1,
    total_time_ps: share === null ? null : 1,
    total_time_us: share === null ? null : 1e-6,
    total_self_time_ps: share === null ? null : 1,
    total_self_time_us: share === null ? null : 1e-6,
    self_time_percent: share,
    flops: null,
    bytes_accessed: null,
    ...extra,
  };
}

function onBoundary(point: { x: number; y: number }, box: { x: number; y: number; width: number; height: number }): boolean {
  const dx = Math.abs(point.x - box.x) - box.width / 2;
  const dy = Math.abs(point.y - box.y) - box.height / 2;
  const tiny = 1e-6;
  return (Math.abs(dx) < tiny && dy <= tiny) || (Math.abs(dy) < tiny && dx <= tiny);
}

const edge = (source: string, target: string): GraphEdge => ({ source, target });

describe("graph_viewer's colour scale", () => {
  it("puts a share in its band, grey for an op that never ran", () => {
    expect(shareFill(null)).toBe(NOT_RUN_FILL);
    expect(shareFill(0)).toBe("#ffffff");
    expect(shareFill(0.99)).toBe("#ffffff");
    expect(shareFill(1)).toBe("#ffe0b2");
    expect(shareFill(7.5)).toBe("#ffb74d");
    expect(shareFill(10)).toBe("#fb8c00");
    expect(shareFill(24.8)).toBe("#e53935");
    expect(shareFill(100)).toBe("#b71c1c");
    expect(textColour(shareFill(100))).toBe("#ffffff");
    expect(textColour(shareFill(1))).toBe("#000000");
  });
});

describe("graph_viewer's node text", () => {
  it("says the fused count of a fusion, the share, and cuts long shapes", () => {
    const fusion = node("fusion.1", 12.345, { opcode: "fusion", fused_instructions: 4, shape: "(" + "f32[5,1024]{1,0}, ".repeat(5) + ")" });
    const lines = nodeLines(fusion);
    expect(lines[0]).toBe("fusion.1");
    expect(lines[1]).toBe("fusion (4 fused)");
    expect(lines[2]).toHaveLength(MAX_CHARS);
    expect(lines[2]?.endsWith("...")).toBe(true);
    expect(lines[3]).toBe("12.3% of op time");
    expect(nodeLines(node("p", null))[3]).toBe("not run");
  });
});

describe("graph_viewer's layout", () => {
  // A diamond: p feeds a and b, both feed r; and q feeds r too.
  const nodes = [node("p", null), node("a", 30), node("b", 5), node("q", null), node("r", 60)];
  const edges = [edge("p", "a"), edge("p", "b"), edge("a", "r"), edge("b", "r"), edge("q", "r")];
  const layout = layoutGraph(nodes, edges, "a");

  it("places every node once, sized by its text", () => {
    expect(layout.nodes.map((n) => n.name)).toEqual(["p", "a", "b", "q", "r"]);
    const a = layout.nodes[1];
    // "30.0% of op time" is the longest of a's lines: 16 characters.
    expect(a?.width).toBe(16 * CHAR_PX + 2 * PAD_PX);
    expect(a?.height).toBe(4 * LINE_PX + PAD_PX);
    expect(layout.nodes.filter((n) => n.centre).map((n) => n.name)).toEqual(["a"]);
    expect(layout.nodes.map((n) => n.fill)).toEqual([NOT_RUN_FILL, "#e53935", "#ffb74d", NOT_RUN_FILL, "#b71c1c"]);
  });

  it("puts operands above their users and no two boxes over each other", () => {
    const at = new Map(layout.nodes.map((n) => [n.name, n]));
    for (const e of edges) {
      const source = at.get(e.source);
      const target = at.get(e.target);
      expect(source && target && source.y + source.height / 2 < target.y - target.height / 2).toBe(true);
    }
    for (const one of layout.nodes)
      for (const other of layout.nodes) {
        if (one === other) continue;
        const apart = Math.abs(one.x - other.x) >= (one.width + other.width) / 2 || Math.abs(one.y - other.y) >= (one.height + other.height) / 2;
        expect(apart).toBe(true);
      }
  });

  it("fits everything in its size and routes each edge from its operand to its user", () => {
    for (const n of layout.nodes) {
      expect(n.x - n.width / 2).toBeGreaterThanOrEqual(0);
      expect(n.y + n.height / 2).toBeLessThanOrEqual(layout.height);
      expect(n.x + n.width / 2).toBeLessThanOrEqual(layout.width);
    }
    expect(layout.edges.map((e) => [e.source, e.target])).toEqual(edges.map((e) => [e.source, e.target]));
    const at = new Map(layout.nodes.map((n) => [n.name, n]));
    for (const e of layout.edges) {
      const first = e.points[0];
      const last = e.points[e.points.length - 1];
      const source = at.get(e.source);
      const target = at.get(e.target);
      expect(e.points.length).toBeGreaterThanOrEqual(2);
      // The path starts on the operand's box and ends on the user's (dagre clips it there).
      expect(first && source && onBoundary(first, source)).toBe(true);
      expect(last && target && onBoundary(last, target)).toBe(true);
    }
  });

  it("lays out a single node (hops 0) and an empty graph", () => {
    const one = layoutGraph([node("x", 100)], [], "x");
    expect(one.nodes).toHaveLength(1);
    expect(one.width).toBeGreaterThanOrEqual(one.nodes[0]?.width ?? Infinity);
    expect(layoutGraph([], [], "").nodes).toEqual([]);
  });
});
