import { describe, expect, it } from "vitest";
import type { MemoryViewer, MemoryViewerPoint } from "../src/api";
import { sequenceData } from "../src/pages/memory_viewer_data";

function point(step: number, bytes: number): MemoryViewerPoint {
  return {
    step,
    sequence_index: step,
    instruction: `op${step}`,
    computation: "main",
    kind: "alloc",
    buffer_id: step,
    bytes,
    mib: bytes / 2 ** 20,
  };
}

function viewer(
  points: MemoryViewerPoint[],
  peak_step: number | null,
  peak_bytes: number,
): MemoryViewer {
  return {
    program: "jit_f(1)",
    memory_space: 0,
    program_names: ["jit_f(1)"],
    peak_bytes,
    peak_mib: peak_bytes / 2 ** 20,
    peak_step,
    peak_instruction: "",
    indefinite_bytes: 32,
    untraced_bytes: 8,
    live_buffers_at_peak: 0,
    programs: [],
    points,
    buffers: [],
  };
}

describe("memory_viewer chart data", () => {
  it("is the bytes after each heap event, the indefinite level, and the peak marker", () => {
    // 40 bytes outside the heap (32 indefinite + 8 untraced), then 100 and 60 heap bytes on top.
    const { datasets } = sequenceData(
      viewer([point(0, 140), point(1, 100)], 0, 140),
    );
    expect(datasets.map((d) => d.key)).toEqual([
      "bytes",
      "indefinite_bytes",
      "peak",
    ]);
    expect(datasets[0]!.data).toEqual([
      { x: 0, y: 140 },
      { x: 1, y: 100 },
    ]);
    expect(datasets[1]!.data).toEqual([
      { x: 0, y: 40 },
      { x: 1, y: 40 },
    ]);
    expect(datasets[2]!.data).toEqual([{ x: 0, y: 140 }]);
    expect(datasets[2]!.label).toBe("Peak (event 0)");
  });
  it("shows a program without a heap trace as one flat level and no marker", () => {
    const { datasets } = sequenceData(viewer([], null, 40));
    expect(datasets.map((d) => d.key)).toEqual(["bytes", "indefinite_bytes"]);
    expect(datasets[0]!.data).toEqual([{ x: 0, y: 40 }]);
  });
});
