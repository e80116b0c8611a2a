import { describe, expect, it } from "vitest";
import type { ApiTable, MemoryProfile } from "../src/api";
import { allocationsForRange, holdersForRange, peakInRange, rangePeak } from "../src/pages/memory_range";
import memoryJson from "./fixtures/memory_profile_legacy.json";

const legacy = memoryJson as unknown as MemoryProfile;
const gpu = legacy.devices[1]!; // GPU:0, peak 2,791,505,408 B at 115,103 us

function timeline(points: [number, number][]) {
  return { timeline: points.map(([time_us, allocated_bytes]) => ({ time_us, allocated_bytes, reserved_bytes: null })) };
}

describe("memory range", () => {
  it("says whether the peak lies in the range (ends included)", () => {
    expect(peakInRange(gpu, null)).toBe(true);
    expect(peakInRange(gpu, { start_ms: 115.103, end_ms: 200 })).toBe(true);
    expect(peakInRange(gpu, { start_ms: 0, end_ms: 115.102 })).toBe(false);
  });
  it("finds the highest level in a range, counting the level carried in", () => {
    // Levels: 100 from 1 ms, 300 from 2 ms, 50 from 4 ms, 80 from 6 ms.
    const device = timeline([
      [1000, 100],
      [2000, 300],
      [4000, 50],
      [6000, 80],
    ]);
    expect(rangePeak(device, { start_ms: 0, end_ms: 10 })).toEqual({ bytes: 300, time_ms: 2 });
    // 3-5 ms: starts at 300 (set at 2 ms), then 50: the carried-in 300, at the range start.
    expect(rangePeak(device, { start_ms: 3, end_ms: 5 })).toEqual({ bytes: 300, time_ms: 3 });
    // 4.5-7 ms: starts at 50, then 80 at 6 ms.
    expect(rangePeak(device, { start_ms: 4.5, end_ms: 7 })).toEqual({ bytes: 80, time_ms: 6 });
    expect(rangePeak(device, { start_ms: 0, end_ms: 0.5 })).toBeNull();
  });
  it("keeps the shown device's holders when its peak is in the range, none otherwise", () => {
    const table: ApiTable = {
      name: "peak_holders",
      columns: [
        { key: "device", label: "Device", kind: "string" },
        { key: "op", label: "Op", kind: "string" },
      ],
      rows: [
        ["CPU", "a"],
        ["GPU:0", "b"],
        ["GPU:0", "c"],
      ],
    };
    // Without a range: the shown device's holders, not the CPU's.
    expect(holdersForRange(table, gpu, null).rows).toEqual([
      ["GPU:0", "b"],
      ["GPU:0", "c"],
    ]);
    expect(holdersForRange(table, { device: "CPU", peak_time_us: 0 }, null).rows).toEqual([["CPU", "a"]]);
    expect(holdersForRange(table, gpu, { start_ms: 100, end_ms: 120 }).rows).toEqual([
      ["GPU:0", "b"],
      ["GPU:0", "c"],
    ]);
    expect(holdersForRange(table, gpu, { start_ms: 0, end_ms: 1 }).rows).toEqual([]);
  });
});

describe("allocations in a range", () => {
  const table: ApiTable = {
    name: "allocations",
    columns: ["device", "bytes", "start_us", "end_us"].map((key) => ({ key, label: key, kind: key === "device" ? "string" : "number" })),
    rows: [
      ["GPU:0", 10, 1000, 2000], // alive 1-2 ms
      ["GPU:0", 20, 3000, null], // from 3 ms, live at the end
      ["CPU", 30, 1000, 9000],
    ],
  };
  it("keeps the shown device's allocations alive during the range", () => {
    // Without a range: the shown device's, in the table's order; the CPU's
    // 30-byte block is another device's and is not listed.
    expect(allocationsForRange(table, gpu, null).rows).toEqual([
      ["GPU:0", 10, 1000, 2000],
      ["GPU:0", 20, 3000, null],
    ]);
    expect(allocationsForRange(table, { device: "CPU" }, null).rows).toEqual([["CPU", 30, 1000, 9000]]);
    expect(allocationsForRange(table, gpu, { start_ms: 1.5, end_ms: 2.5 }).rows).toEqual([["GPU:0", 10, 1000, 2000]]);
    // Live at the end: alive in any range after its start.
    expect(allocationsForRange(table, gpu, { start_ms: 50, end_ms: 60 }).rows).toEqual([["GPU:0", 20, 3000, null]]);
    // Ends included: freed at 2 ms is alive in [2, 2.5]; started at 3 ms is alive in [0, 3].
    expect(allocationsForRange(table, gpu, { start_ms: 2, end_ms: 3 }).rows).toHaveLength(2);
    expect(allocationsForRange(table, gpu, { start_ms: 2.1, end_ms: 2.9 }).rows).toEqual([]);
  });
});
