import { describe, expect, it } from "vitest";
import { THREAD_COLOR, categoryColor, icicleLayout, nodesAlong, rectAt, type IcicleNode } from "../src/components/icicle";
import { hoverText } from "../src/pages/flame_graph";

const leaf = (name: string, total: number, category = "cpu_op"): IcicleNode => ({ name, category, self_ps: total, total_ps: total, children: [] });
// main (200: idle 50) > A (100) > [B (30) > D (10), C (40)]; F (30); E (20)
const B: IcicleNode = { name: "B", category: "cpu_op", self_ps: 20, total_ps: 30, children: [leaf("D", 10)] };
const A: IcicleNode = { name: "A", category: "cpu_op", self_ps: 30, total_ps: 100, children: [leaf("C", 40), B] };
const ROOT: IcicleNode = { name: "main", category: "thread", self_ps: 50, total_ps: 200, children: [A, leaf("F", 30, "python_function"), leaf("E", 20)] };

describe("icicle layout", () => {
  it("gives each frame its share of its parent's width, children side by side", () => {
    const rects = icicleLayout(ROOT, ["main"], 1000);
    const of = (name: string) => rects.find((rect) => rect.node.name === name)!;
    expect([of("main").x, of("main").width, of("main").depth]).toEqual([0, 1000, 0]);
    expect([of("A").x, of("A").width, of("A").depth]).toEqual([0, 500, 1]); // 100 of 200
    expect([of("F").x, of("F").width]).toEqual([500, 150]);
    expect([of("E").x, of("E").width]).toEqual([650, 100]);
    expect([of("C").x, of("C").width, of("C").depth]).toEqual([0, 200, 2]); // 40 of 100 of 500 px
    expect([of("B").x, of("B").width]).toEqual([200, 150]);
    expect([of("D").x, of("D").width, of("D").depth]).toEqual([200, 50, 3]);
    expect(of("D").path).toEqual(["main", "A", "B", "D"]);
  });
  it("zooms: the focus and its ancestors are full width, its children fill it", () => {
    const rects = icicleLayout(ROOT, ["main", "A", "B"], 600);
    expect(rects.map((rect) => [rect.node.name, rect.x, rect.width, rect.depth])).toEqual([
      ["main", 0, 600, 0],
      ["A", 0, 600, 1],
      ["B", 0, 600, 2],
      ["D", 0, 200, 3], // 10 of 30
    ]);
  });
  it("falls back to the root for a path that is not in the tree, and leaves out slivers", () => {
    expect(nodesAlong(ROOT, ["main", "nope"])).toBeNull();
    expect(icicleLayout(ROOT, ["main", "nope"], 1000)[0]!.width).toBe(1000);
    const narrow = icicleLayout(ROOT, ["main"], 10, 1); // D would be 0.5 px
    expect(narrow.some((rect) => rect.node.name === "D")).toBe(false);
  });
  it("finds the frame under a point", () => {
    const rects = icicleLayout(ROOT, ["main"], 1000);
    expect(rectAt(rects, 520, 1)?.node.name).toBe("F");
    expect(rectAt(rects, 220, 3)?.node.name).toBe("D");
    expect(rectAt(rects, 900, 1)).toBeNull(); // idle: the thread's self time
  });
  it("colours by category, threads in grey", () => {
    expect(categoryColor("thread")).toBe(THREAD_COLOR);
    expect(categoryColor("cpu_op")).toBe(categoryColor("cpu_op"));
    expect(categoryColor("cpu_op")).not.toBe(THREAD_COLOR);
  });
  it("says total, share and self on hover", () => {
    expect(hoverText({ ...A, total_ps: 100e6, self_ps: 30e6 }, { ...ROOT, total_ps: 200e6 })).toBe("A: total 100.00 us (50.0% of main), self 30.00 us");
  });
});
