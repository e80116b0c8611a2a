import { describe, expect, it } from "vitest";
import type { ApiTable } from "../src/api";
import { withoutColumns } from "../src/components/table";
import { zeroColumns } from "../src/pages/applies";

// Three steps of a CPU-only profile: device compute is 0 in each, host compute is not, and
// the last column is text (never "all zero").
const steps: ApiTable = {
  name: "steps",
  columns: [
    { key: "step", label: "Step", kind: "number" },
    { key: "device_compute_us", label: "Device compute (us)", kind: "number" },
    { key: "host_compute_us", label: "Host compute (us)", kind: "number" },
    { key: "set_aside", label: "Set aside", kind: "string" },
  ],
  rows: [
    [0, 0, 5.5, null],
    [1, 0, 0, null],
    [2, 0, 3, "outlier"],
  ],
};

describe("only what applies", () => {
  it("finds the number columns that are zero in every row", () => {
    expect(zeroColumns(steps)).toEqual(["device_compute_us"]);
    expect(zeroColumns(steps, ["host_compute_us"])).toEqual([]);
    expect(zeroColumns({ ...steps, rows: [] })).toEqual([]);
  });
  it("drops columns from the view, keeping the rows aligned", () => {
    const shown = withoutColumns(steps, ["device_compute_us"]);
    expect(shown.columns.map((column) => column.key)).toEqual(["step", "host_compute_us", "set_aside"]);
    expect(shown.rows).toEqual([
      [0, 5.5, null],
      [1, 0, null],
      [2, 3, "outlier"],
    ]);
  });
});
