import { describe, expect, it } from "vitest";
import type { CriticalPath } from "../src/api";
import { KIND_COLORS, gainPercent, pathKindsData, stepAt, topTable, whatIfTable } from "../src/pages/critical_path_data";
import { overlayAt, trackIds } from "../src/trace/critical_overlay";
import type { TrackInfo } from "../src/trace/decode";

// Two steps of 10 and 30 us: step 7's path is 6 us of kernel and 4 us of launch, step 8's
// 30 us of input; the mean step is 20 us. Input free predicts 10 us (-50%).
const US = 1_000_000;
const data: CriticalPath = {
  steps: [
    {
      step: 7,
      start_ps: 0,
      duration_ps: 10 * US,
      by_kind_ps: { kernel: 6 * US, launch: 4 * US, input: 0 },
      top: [{ name: "gemm", kind: "kernel", ps: 6 * US }],
      // Two segments, as columns: gemm [4, 10) us on plane 1 line 0, the launch [0, 4) us on plane 0 line 2.
      segments: {
        start_ps: [4 * US, 0],
        end_ps: [10 * US, 4 * US],
        kind: ["kernel", "launch"],
        plane: [1, 0],
        line: [0, 2],
        name: ["gemm", "cudaLaunchKernel"],
      },
    },
    {
      step: 8,
      start_ps: 10 * US,
      duration_ps: 30 * US,
      by_kind_ps: { kernel: 0, launch: 0, input: 30 * US },
      top: [],
      segments: { start_ps: [10 * US], end_ps: [40 * US], kind: ["input"], plane: [0], line: [9], name: ["next"] },
    },
  ],
  what_if: [{ change: "input_free", description: "input were free", predicted_step_ps: 10 * US, predicted_steps_ps: [10 * US, 10 * US] }],
  mean_step_ps: 20 * US,
  anchor: "/host:CPU / main",
  kinds: ["kernel", "launch", "input"],
};

describe("the critical path page's figures", () => {
  it("stacks each step's path by kind, in microseconds", () => {
    const chart = pathKindsData(data);
    expect(chart.labels).toEqual(["7", "8"]);
    expect(chart.datasets.map((set) => [set.key, set.data])).toEqual([
      ["kernel", [6, 0]],
      ["launch", [4, 0]],
      ["input", [0, 30]],
    ]);
  });

  it("gives each what-if its gain against the mean step", () => {
    expect(gainPercent(20 * US, 10 * US)).toBe(50);
    expect(gainPercent(0, 10)).toBe(0);
    expect(whatIfTable(data).rows).toEqual([["input were free", 10 * US, 50, "input_free"]]);
  });

  it("lists a step's top ops with their share of the step", () => {
    expect(topTable(data.steps[0]!).rows).toEqual([["gemm", "kernel", 6 * US, 60]]);
  });

  it("finds the step holding a time, else the nearest", () => {
    expect(stepAt(data.steps, 5 * US)).toBe(0);
    expect(stepAt(data.steps, 25 * US)).toBe(1);
    expect(stepAt(data.steps, 100 * US)).toBe(1);
    expect(stepAt([], 0)).toBe(-1);
  });

  it("places the overlay's segments on the viewer's tracks by plane and line", () => {
    const track = (id: number, plane: number, line: number): TrackInfo => ({ id, section: "", name: "", plane, line, event_count: 1, max_depth: 0, first_lane: id });
    const tracks = trackIds([track(3, 1, 0), track(4, 0, 2)]);
    const overlay = overlayAt(data, tracks, 2 * US)!;
    expect([overlay.index, overlay.step]).toEqual([0, 7]);
    expect(overlay.marks.map((mark) => [mark.start_ps, mark.end_ps, mark.track])).toEqual([
      [4 * US, 10 * US, 3],
      [0, 4 * US, 4],
    ]);
    expect(overlay.marks.map((mark) => mark.color)).toEqual([KIND_COLORS.kernel, KIND_COLORS.launch]);
    // Step 8's input wait lies on a line the viewer has no track for.
    expect(overlayAt(data, tracks, 20 * US)!.marks.map((mark) => mark.track)).toEqual([-1]);
  });
});
