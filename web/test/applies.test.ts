import { describe, expect, it } from "vitest";
import type { ApiTable } from "../src/api";
import { withoutColumns } from "../src/components/table";
import { type FlopsNode, hasFlops, hasInputEvents, missingSidesNote, sidesWithOps, zeroColumns } from "../src/pages/applies";

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

describe("only what applies, per tool", () => {
  it("framework_op_stats: the sides with ops, and one line for those without", () => {
    const host = { host_or_device: "Host" };
    const device = { host_or_device: "Device" };
    expect(sidesWithOps([host, device, host])).toEqual(["Host", "Device"]);
    expect(missingSidesNote([host, device])).toBe("");
    expect(sidesWithOps([host])).toEqual(["Host"]);
    expect(missingSidesNote([host])).toBe("No device-side ops in this profile (no accelerator work was recorded): host-side ops only.");
    expect(sidesWithOps([device])).toEqual(["Device"]);
    expect(missingSidesNote([device])).toBe("No host-side ops in this profile: device-side ops only.");
    expect(sidesWithOps([])).toEqual([]);
    expect(missingSidesNote([])).toMatch(/^No framework ops in this profile: /);
  });
  it("op_profile: FLOPs anywhere in the tree, or none", () => {
    const leaf = (flops: number | null): FlopsNode => ({ flops, children: [] });
    expect(hasFlops({ flops: null, children: [{ flops: null, children: [leaf(null), leaf(12)] }] })).toBe(true);
    expect(hasFlops({ flops: null, children: [{ flops: null, children: [leaf(null)] }] })).toBe(false);
    expect(hasFlops(leaf(0))).toBe(true); // 0 FLOPs is a count, not a missing one
  });
  it("input_pipeline_analyzer: input events are the input ops found", () => {
    expect(hasInputEvents({ input_ops: [] })).toBe(false);
    expect(hasInputEvents({ input_ops: [{ name: "DataLoader" }] })).toBe(true);
  });
});
