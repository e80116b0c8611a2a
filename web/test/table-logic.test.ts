import { describe, expect, it } from "vitest";
import type { ApiColumn, CellValue } from "../src/api";
import {
  compareCells,
  columnShares,
  defaultHidden,
  filterRows,
  hiddenColumns,
  longTextColumns,
  nextSort,
  shownNote,
  sortRows,
  tableView,
  toggleHidden,
  visibleIndexes,
} from "../src/components/table-logic";
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
    expect(nextSort(first, "name")).toEqual({
      key: "name",
      direction: "ascending",
    });
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

describe("column choice", () => {
  const kernelColumns: ApiColumn[] = [
    { key: "kernel_name", label: "Kernel name", kind: "string" },
    { key: "block_dim", label: "Block dim", kind: "string" },
    { key: "total_duration_us", label: "Total (us)", kind: "number" },
    { key: "total_duration_ps", label: "Total (ps)", kind: "number" },
    { key: "other_ps", label: "Other (ps)", kind: "number" },
  ];
  it("hides by default an exact _ps column whose _us twin is there", () => {
    // total_duration_ps has total_duration_us; other_ps has no other_us.
    expect(defaultHidden(kernelColumns)).toEqual(["total_duration_ps"]);
    expect(hiddenColumns(null, kernelColumns)).toEqual(["total_duration_ps"]);
  });
  it("reads the stored choice, dropping keys the table lacks, defaults on garbage", () => {
    expect(hiddenColumns('["block_dim","gone"]', kernelColumns)).toEqual(["block_dim"]);
    // An explicit empty choice shows everything, the _ps column too.
    expect(hiddenColumns("[]", kernelColumns)).toEqual([]);
    expect(hiddenColumns("{not json", kernelColumns)).toEqual(["total_duration_ps"]);
    expect(hiddenColumns('{"a":1}', kernelColumns)).toEqual(["total_duration_ps"]);
  });
  it("never shows no column", () => {
    const all = kernelColumns.map((column) => column.key);
    expect(visibleIndexes(kernelColumns, ["block_dim"])).toEqual([0, 2, 3, 4]);
    expect(visibleIndexes(kernelColumns, all)).toEqual([0]);
    // Hiding the last shown column is refused.
    const allButOne = all.slice(1);
    expect(toggleHidden(kernelColumns, allButOne, "kernel_name", false)).toEqual(allButOne);
    expect(toggleHidden(kernelColumns, ["block_dim"], "block_dim", true)).toEqual([]);
    expect(toggleHidden(kernelColumns, [], "block_dim", false)).toEqual(["block_dim"]);
  });
  it("hides by default an HLO op's whole text and its program id", () => {
    const hlo: ApiColumn[] = [
      { key: "name", label: "HLO op", kind: "string" },
      { key: "program_id", label: "Program id", kind: "string" },
      { key: "expression", label: "Expression", kind: "string" },
    ];
    expect(defaultHidden(hlo)).toEqual(["program_id", "expression"]);
  });
  it("hides by default a page's least-read columns, until the user chooses", () => {
    // block_dim is the page's least read here: hidden with the _ps twin, in the table's order.
    expect(defaultHidden(kernelColumns, ["block_dim", "not_a_column"])).toEqual(["block_dim", "total_duration_ps"]);
    expect(hiddenColumns(null, kernelColumns, ["block_dim"])).toEqual(["block_dim", "total_duration_ps"]);
    expect(hiddenColumns("{not json", kernelColumns, ["block_dim"])).toEqual(["block_dim", "total_duration_ps"]);
    // A stored choice wins: the user showed block_dim again.
    expect(hiddenColumns("[]", kernelColumns, ["block_dim"])).toEqual([]);
  });
  it("splits the long columns' width 2:1:1, the first (the name) widest", () => {
    // Weights 2, 1, 1 of 4: 50%, 25%, 25%; one long column takes it all; 2 of 3 is 66.7%.
    expect([...columnShares(["kernel_name", "op_name", "other"])]).toEqual([
      ["kernel_name", 50],
      ["op_name", 25],
      ["other", 25],
    ]);
    expect([...columnShares(["name"])]).toEqual([["name", 100]]);
    expect([...columnShares(["kernel_name", "op_name"])]).toEqual([
      ["kernel_name", 66.7],
      ["op_name", 33.3],
    ]);
  });
  it("cuts only string columns with long cells", () => {
    // 25 characters is over the 24 a short string may have; "256,1,1" is not.
    const cells: CellValue[][] = [["x".repeat(25), "256,1,1", 1, 1, 1]];
    expect(longTextColumns(kernelColumns, cells)).toEqual(["kernel_name"]);
    expect(longTextColumns(kernelColumns, [["x".repeat(24), "256,1,1", 1, 1, 1]])).toEqual([]);
  });
});
