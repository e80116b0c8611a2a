import { describe, expect, it } from "vitest";
import { rooflineData } from "../src/components/roofline-data";
import type { RooflineModel, RooflineRow } from "../src/generated/roofline_model";

function row(name: string, intensity: number | null, gflops: number | null): RooflineRow {
  return {
    attainable_gflops_per_second: null,
    bandwidth_utilization: null,
    bound_by: null,
    bytes_accessed: null,
    category: "",
    compute_utilization: null,
    device: "all",
    flops: null,
    gflops_per_second: gflops,
    level: "op",
    memory_bandwidth_gb_per_second: null,
    name,
    occurrences: 1,
    operational_intensity: intensity,
    program: "",
    roofline_fraction: null,
    time_ps: 1,
    time_us: 0,
  };
}

function model(ops: RooflineRow[], tflops: number | null, gbps: number | null): RooflineModel {
  return {
    device: "all",
    devices: [],
    source: "xla",
    unestimated_ops: 0,
    unestimated_time_ps: 0,
    unestimated: [],
    assumed_ops: 0,
    assumptions: [],
    peaks: [],
    peak_tflops: tflops,
    peak_gbps: gbps,
    ridge_point: null,
    device_rows: [],
    programs: [],
    ops,
  };
}

describe("rooflineData", () => {
  it("plots ops with intensity and rate, and the two roofline segments meeting at the ridge", () => {
    const data = rooflineData(model([row("a", 2, 100), row("b", 0, 0), row("c", null, null), row("d", 400, 5000)], 100, 1000));
    expect(data.points).toEqual([
      { x: 2, y: 100, name: "a" },
      { x: 400, y: 5000, name: "d" },
    ]);
    expect(data.left).toBe(2);
    // 100 TFLOP/s = 100,000 GFLOP/s; ridge 100,000 / 1,000 GB/s = 100 FLOP/byte
    expect(data.memory).toEqual([
      { x: 0.5, y: 500 },
      { x: 100, y: 100000 },
    ]);
    expect(data.compute).toEqual([
      { x: 100, y: 100000 },
      { x: 1600, y: 100000 },
    ]);
  });

  it("draws no roofline without both peaks", () => {
    const data = rooflineData(model([row("a", 2, 100)], null, 1000));
    expect(data.memory).toEqual([]);
    expect(data.compute).toEqual([]);
    expect(data.points).toHaveLength(1);
  });
});
