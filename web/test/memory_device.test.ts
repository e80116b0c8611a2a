import { describe, expect, it } from "vitest";
import type { MemoryDevice, MemoryProfile } from "../src/api";
import { memoryTimelineData } from "../src/components/chart-data";
import { MEMORY_DEVICE_PARAM, memoryDeviceAddress, pickMemoryDevice, reservedLabel, wantedMemoryDevice } from "../src/pages/memory_device";
import memoryJson from "./fixtures/memory_profile_legacy.json";
import memoryTpuJson from "./fixtures/memory_profile_tpu.json";

const legacy = memoryJson as unknown as MemoryProfile;
const tpu = memoryTpuJson as unknown as MemoryProfile;

function fake(device: string, peak: number): MemoryDevice {
  return { ...legacy.devices[0]!, device, peak_allocated_bytes: peak };
}

describe("memory device choice", () => {
  it("opens on the largest peak, not the first device", () => {
    // Issue 16's case: a CPU allocator with an 8 B peak listed before GPU:1 with 6 GiB.
    const devices = [fake("CPU", 8), fake("GPU:0", 2 ** 20), fake("GPU:1", 6 * 2 ** 30)];
    expect(pickMemoryDevice(devices)?.device).toBe("GPU:1");
    // The legacy fixture: CPU 57,803,520 B, GPU:0 2,791,505,408 B (its peak_allocated_bytes).
    expect(pickMemoryDevice(legacy.devices)?.device).toBe("GPU:0");
  });
  it("keeps the device the address names, and ignores one the profile lacks", () => {
    const devices = [fake("CPU", 8), fake("GPU:1", 6 * 2 ** 30)];
    expect(pickMemoryDevice(devices, "CPU")?.device).toBe("CPU");
    expect(pickMemoryDevice(devices, "GPU:7")?.device).toBe("GPU:1");
    expect(pickMemoryDevice(devices, null)?.device).toBe("GPU:1");
    expect(pickMemoryDevice([])).toBeNull();
  });
  it("takes the first of equal peaks", () => {
    expect(pickMemoryDevice([fake("device 1", 10), fake("device 2", 10)])?.device).toBe("device 1");
  });
  it("reads and writes memory_device in the address of its own run and tool", () => {
    const selection = { run: "r 1", tool: "memory_profile" };
    const search = "?run=r+1&host=h&tool=memory_profile&other=1";
    const next = memoryDeviceAddress("/", search, selection, "GPU:1")!;
    expect(next).toBe("/?run=r+1&host=h&tool=memory_profile&other=1&memory_device=GPU%3A1");
    expect(wantedMemoryDevice(next.slice(1))).toBe("GPU:1");
    // Replaces an earlier choice rather than adding a second one.
    expect(new URLSearchParams(memoryDeviceAddress("/", next.slice(1), selection, "CPU")!.slice(2)).getAll(MEMORY_DEVICE_PARAM)).toEqual(["CPU"]);
    // The shell moved to another tool meanwhile: nothing is written.
    expect(memoryDeviceAddress("/", "?run=r+1&tool=op_profile", selection, "CPU")).toBeNull();
  });
});

describe("reserved memory and the peak on the chart", () => {
  it("labels XSpace's reserved figure as beside the allocated one", () => {
    expect(reservedLabel(tpu.devices[0]!)).toBe("Peak reserved (beside allocated)");
    expect(reservedLabel(legacy.devices[1]!)).toBe("Peak reserved");
    const chart = memoryTimelineData(tpu.devices[0]!);
    expect(chart.datasets.find((dataset) => dataset.key === "reserved_bytes")?.label).toBe("Reserved (beside allocated)");
  });
  it("marks the peak at its time (ms) and value", () => {
    const device = legacy.devices[1]!;
    const peak = memoryTimelineData(device).datasets.find((dataset) => dataset.key === "peak")!;
    expect(peak.data).toEqual([{ x: device.peak_time_us / 1000, y: device.peak_allocated_bytes }]);
    // 2,791,505,408 B / 2^30 = 2.5998 GiB, formatBytes's 3 digits: 2.60 GiB; 115,103 us = 115.103 ms (the fixture's peak).
    expect(peak.label).toBe("Peak 2.60 GiB at 115.103 ms");
  });
});
