import { describe, expect, it } from "vitest";
import type { Distributed, DistributedRank, DistributedStep } from "../src/generated/distributed";
import { heatColor, heatGrid, HIGH_RGB, isMetric, LOW_RGB, metricUs, stepTraceAddress, unitLabel } from "../src/state/distributed";

function rank(number: number, host: string, device = "", hostRank = number): DistributedRank {
  return {
    rank: number,
    host,
    device,
    host_rank: hostRank,
    file_host: `file_${host}`,
    source: "",
    format: "kineto",
    clock: "",
    start_offset_ps: 0,
    steps: 2,
    step_time_mean_ps: 0,
    collective_wait_ps: 0,
    warnings: [],
  };
}

function step(rankNumber: number, number: number, stepPs: number, waitPs: number, exposedPs: number, traceStartPs: number): DistributedStep {
  return {
    rank: rankNumber,
    step: number,
    start_offset_ps: 0,
    trace_start_ps: traceStartPs,
    step_time_ps: stepPs,
    compute_ps: 0,
    collective_ps: exposedPs,
    exposed_collective_ps: exposedPs,
    overlap_ps: 0,
    memcpy_ps: 0,
    collective_wait_ps: waitPs,
    breakdown: {},
    set_aside: false,
  };
}

// Two ranks listed out of order; rank 1 lacks step 8.
const data: Pick<Distributed, "ranks" | "steps" | "unit"> = {
  unit: "rank",
  ranks: [rank(1, "b"), rank(0, "a")],
  steps: [step(0, 7, 2_000_000, 500_000, 250_000, 10_000_000), step(0, 8, 3_000_000, 0, 0, 12_000_000), step(1, 7, 5_000_000, 1_500_000, 1_000_000, 40_000_000)],
};

describe("distributed state", () => {
  it("labels device units by chip, and by host where the run has several", () => {
    const chips = { unit: "device", ranks: [rank(0, "tpu", "/device:TPU:0", 0), rank(1, "tpu", "/device:TPU:1", 0)], steps: [step(1, 0, 4_000_000, 0, 0, 0), step(0, 0, 2_000_000, 0, 0, 0)] };
    expect(unitLabel(chips, 1)).toBe("1 TPU:1");
    const grid = heatGrid(chips, "step_time");
    expect([grid.axis, grid.ranks, grid.cells.map((cell) => cell.y)]).toEqual(["device", ["0 TPU:0", "1 TPU:1"], ["1 TPU:1", "0 TPU:0"]]);
    const nodes = { unit: "device", ranks: [rank(0, "node0", "/device:GPU:0", 0), rank(1, "node1", "/device:GPU:0", 1)] };
    expect([unitLabel(nodes, 0), unitLabel(nodes, 1), unitLabel(nodes, 7)]).toEqual(["0 node0 GPU:0", "1 node1 GPU:0", "7"]);
    expect(heatGrid(data, "step_time").axis).toBe("rank");
  });

  it("reads each metric in microseconds", () => {
    const row = data.steps[2]!;
    // 5,000,000 ps = 5 us; 1,500,000 ps = 1.5 us; 1,000,000 ps = 1 us.
    expect(metricUs(row, "step_time")).toBe(5);
    expect(metricUs(row, "collective_wait")).toBe(1.5);
    expect(metricUs(row, "exposed_collective")).toBe(1);
    expect(isMetric("step_time") && isMetric("collective_wait") && isMetric("device_compute") && !isMetric("toString") && !isMetric("compute")).toBe(true);
  });

  it("lays the cells on sorted steps and ranks, with the range of the values", () => {
    const grid = heatGrid(data, "step_time");
    expect(grid.steps).toEqual(["7", "8"]);
    expect(grid.ranks).toEqual(["0", "1"]);
    expect(grid.cells).toEqual([
      { x: "7", y: "0", rank: 0, step: 7, v: 2 },
      { x: "8", y: "0", rank: 0, step: 8, v: 3 },
      { x: "7", y: "1", rank: 1, step: 7, v: 5 },
    ]);
    expect([grid.min, grid.max]).toEqual([2, 5]);
    const waits = heatGrid(data, "collective_wait");
    expect(waits.cells.map((cell) => cell.v)).toEqual([0.5, 0, 1.5]);
    expect([waits.min, waits.max]).toEqual([0, 1.5]);
    expect(heatGrid({ unit: "rank", ranks: [], steps: [] }, "step_time")).toMatchObject({ cells: [], min: 0, max: 0 });
  });

  it("colours linearly from the pale end to the dark end", () => {
    expect(heatColor(2, 2, 5)).toBe(`rgb(${LOW_RGB.join(", ")})`);
    expect(heatColor(5, 2, 5)).toBe(`rgb(${HIGH_RGB.join(", ")})`);
    // Half way: (232 + 23) / 2 = 127.5 -> 128, (240 + 78) / 2 = 159, (254 + 166) / 2 = 210.
    expect(heatColor(3.5, 2, 5)).toBe("rgb(128, 159, 210)");
    // Out of range is clamped; one value everywhere is the pale end.
    expect(heatColor(9, 2, 5)).toBe(heatColor(5, 2, 5));
    expect(heatColor(4, 4, 4)).toBe(`rgb(${LOW_RGB.join(", ")})`);
  });

  it("opens the rank's host in the trace viewer on the step's own window", () => {
    // Rank 1 is host "b", whose file is "file_b"; its step 7 starts at 40,000,000 ps and lasts 5,000,000.
    expect(stepTraceAddress("recsys", data, 1, 7)).toBe("?run=recsys&host=file_b&tool=trace_viewer&start_ps=40000000&end_ps=45000000");
    expect(stepTraceAddress("recsys", data, 0, 8)).toBe("?run=recsys&host=file_a&tool=trace_viewer&start_ps=12000000&end_ps=15000000");
    expect(stepTraceAddress("recsys", data, 1, 8)).toBeNull();
    expect(stepTraceAddress("recsys", data, 3, 7)).toBeNull();
  });
});
