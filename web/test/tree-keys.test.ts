import { describe, expect, it } from "vitest";
import { treeKey, type VisibleRow } from "../src/components/tree-keys";

// root (open) > program A (open) > op 1, op 2; program B (closed, has children); program C (leaf)
const rows: VisibleRow[] = [
  { path: "r", parent: null, expandable: true, expanded: true },
  { path: "r/A", parent: "r", expandable: true, expanded: true },
  { path: "r/A/1", parent: "r/A", expandable: false, expanded: false },
  { path: "r/A/2", parent: "r/A", expandable: false, expanded: false },
  { path: "r/B", parent: "r", expandable: true, expanded: false },
  { path: "r/C", parent: "r", expandable: false, expanded: false },
];

describe("tree keys", () => {
  it("moves up and down the visible rows, and to the ends", () => {
    expect(treeKey(rows, "r/A/2", "ArrowDown")).toEqual({ kind: "focus", path: "r/B" });
    expect(treeKey(rows, "r/A/1", "ArrowUp")).toEqual({ kind: "focus", path: "r/A" });
    expect(treeKey(rows, "r/C", "ArrowDown")).toBeNull();
    expect(treeKey(rows, "r", "ArrowUp")).toBeNull();
    expect(treeKey(rows, "r/A/1", "Home")).toEqual({ kind: "focus", path: "r" });
    expect(treeKey(rows, "r/A/1", "End")).toEqual({ kind: "focus", path: "r/C" });
  });
  it("opens a closed row, then moves into it", () => {
    expect(treeKey(rows, "r/B", "ArrowRight")).toEqual({ kind: "expand", path: "r/B" });
    expect(treeKey(rows, "r/A", "ArrowRight")).toEqual({ kind: "focus", path: "r/A/1" });
    expect(treeKey(rows, "r/C", "ArrowRight")).toBeNull();
  });
  it("closes an open row, else moves to the parent", () => {
    expect(treeKey(rows, "r/A", "ArrowLeft")).toEqual({ kind: "collapse", path: "r/A" });
    expect(treeKey(rows, "r/A/2", "ArrowLeft")).toEqual({ kind: "focus", path: "r/A" });
    expect(treeKey(rows, "r/B", "ArrowLeft")).toEqual({ kind: "focus", path: "r" });
    expect(treeKey(rows, "r", "ArrowLeft")).toEqual({ kind: "collapse", path: "r" });
  });
  it("ignores other keys and unknown rows", () => {
    expect(treeKey(rows, "r/A", "x")).toBeNull();
    expect(treeKey(rows, "nope", "ArrowDown")).toBeNull();
  });
});
