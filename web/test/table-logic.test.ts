import { describe, expect, it } from "vitest";
import type { ApiColumn, CellValue } from "../src/api";
import { compareCells, filterRows, nextSort, shownNote, sortRows, tableView } from "../src/components/table-logic";
import { displayLabel, withoutColumns } from "../src/components/table";
import { formatCount } from "../src/format";

const columns: ApiColumn[] = [
  { key: "name", label: "Name", kind: "string" },
  { key: "type", label: "Type", kind: "string" },
  { key: "total_us", label: "Total (us)", kind: "number" },
  { key: "tc", label: "TensorCore", kind: "bool" },
];
const rows: CellValue[][] = [
  ["aten::conv2d", "Conv", 30, true],
  ["aten::add_", "Add", 10, false],
  ["Memcpy HtoD", "copy", null, false],
  ["aten::mul", "Mul", 20, false],
  ["aten::Mul", "mul", 20, true],
];

describe("sorting", () => {
  it("sorts numbers numerically and keeps nulls last both ways", () => {
    const up = sortRows(rows, 2, "ascending").map((row) => row[2]);
    expect(up).toEqual([10, 20, 20, 30, null]);
    const down = sortRows(rows, 2, "descending").map((row) => row[2]);
    expect(down).toEqual([30, 20, 20, 10, null]);
  });
  it("is stable: equal rows keep the tool's order", () => {
    const names = sortRows(rows, 2, "descending").map((row) => row[0]);
    expect(names.indexOf("aten::mul")).toBeLessThan(names.indexOf("aten::Mul"));
  });
  it("sorts strings without regard to case", () => {
    const names = sortRows(rows, 0, "ascending").map((row) => row[0]);
    expect(names[0]).toBe("aten::add_");
    expect(names[names.length - 1]).toBe("Memcpy HtoD");
  });
  it("sorts booleans false first", () => {
    expect(compareCells(false, true)).toBeLessThan(0);
    expect(sortRows(rows, 3, "ascending").map((row) => row[3])).toEqual([false, false, false, true, true]);
  });
  it("sorts ascending on the first click and flips on the next", () => {
    const first = nextSort(null, "total_us");
    expect(first).toEqual({ key: "total_us", direction: "ascending" });
    expect(nextSort(first, "total_us").direction).toBe("descending");
    expect(nextSort(nextSort(first, "total_us"), "total_us").direction).toBe("ascending");
    expect(nextSort(first, "name")).toEqual({ key: "name", direction: "ascending" });
  });
});

describe("filtering", () => {
  it("matches string columns case-insensitively", () => {
    expect(filterRows(rows, columns, "MUL").map((row) => row[0])).toEqual(["aten::mul", "aten::Mul"]);
    expect(filterRows(rows, columns, "copy").map((row) => row[0])).toEqual(["Memcpy HtoD"]);
  });
  it("ignores number columns and blank text", () => {
    expect(filterRows(rows, columns, "30")).toEqual([]);
    expect(filterRows(rows, columns, "  ")).toBe(rows);
  });
});

describe("the visible window", () => {
  const many: CellValue[][] = Array.from({ length: 1200 }, (_, i) => [`op${i}`, i % 2 ? "odd" : "even", i, false]);
  it("caps the rows shown but sorts and filters over all of them", () => {
    const view = tableView(many, columns, "", { key: "total_us", direction: "descending" }, 500);
    expect(view.rows).toHaveLength(500);
    expect(view.rows[0]![2]).toBe(1199);
    expect(view.matching).toBe(1200);
    expect(shownNote(view, formatCount)).toBe("showing 500 of 1,200 rows");
  });
  it("says how many rows the filter left", () => {
    const view = tableView(many, columns, "odd", null, 500);
    expect(view.matching).toBe(600);
    expect(shownNote(view, formatCount)).toBe("showing 500 of 600 rows (1,200 in all)");
  });
});

describe("table views", () => {
  it("drops columns with their cells", () => {
    const slim = withoutColumns({ name: "t", columns, rows }, ["type", "tc"]);
    expect(slim.columns.map((column) => column.key)).toEqual(["name", "total_us"]);
    expect(slim.rows[0]).toEqual(["aten::conv2d", 30]);
  });
  it("leaves the unit out of headers (cells carry theirs)", () => {
    expect(displayLabel("Total time (us)")).toBe("Total time");
    expect(displayLabel("Peak allocated (bytes)")).toBe("Peak allocated");
    expect(displayLabel("Self time %")).toBe("Self time %");
  });
});
