import { describe, expect, it } from "vitest";
import type { FrameworkOpStats, InputPipeline, MemoryProfile, OverviewPage } from "../src/api";
import {
  breakdownKeys,
  byteTickStep,
  hostBreakdownData,
  inputWaitData,
  kernelLabel,
  memoryTimelineData,
  opTypePieData,
  opTypeSlices,
  stepLabel,
  stepTimeData,
  topKernelsPieData,
} from "../src/components/chart-data";
import overviewJson from "./fixtures/overview_v100.json";
import fosJson from "./fixtures/framework_op_stats_v100.json";
import inputJson from "./fixtures/input_pipeline_legacy.json";
import memoryJson from "./fixtures/memory_profile_legacy.json";
import memoryTpuJson from "./fixtures/memory_profile_tpu.json";

const overview = overviewJson as unknown as OverviewPage;
const fos = fosJson as unknown as FrameworkOpStats;
const input = inputJson as unknown as InputPipeline;
const memory = memoryJson as unknown as MemoryProfile;
const memoryTpu = memoryTpuJson as unknown as MemoryProfile;

describe("step labels", () => {
  it("group thousands", () => {
    // 1009 = one thousand and nine; 1234567 has two groups of three after the first digit.
    expect(stepLabel(1009)).toBe("1,009");
    expect(stepLabel(999)).toBe("999");
    expect(stepLabel(1234567)).toBe("1,234,567");
  });
});

describe("step-time graph", () => {
  const chart = stepTimeData(overview);
  it("has one bar per step, labelled by step number", () => {
    // Step numbers written with thousands separators (the fixture's are below 1,000: as is).
    expect(chart.labels).toEqual(overview.steps.map((step) => String(step.step)));
  });
  it("has one dataset per *_us breakdown category, in the tool's order", () => {
    const keys = Object.keys(overview.steps[0]!.breakdown).filter((key) => key.endsWith("_us"));
    expect(chart.datasets.map((dataset) => dataset.key)).toEqual(keys);
    expect(breakdownKeys(overview.steps)).toEqual(keys);
  });
  it("stacks to each step's time", () => {
    overview.steps.forEach((step, index) => {
      const total = chart.datasets.reduce((sum, dataset) => sum + dataset.data[index]!, 0);
      expect(total).toBeCloseTo(step.step_time_us, 3);
    });
  });
});

describe("input pipeline charts", () => {
  it("splits each step into input and the rest", () => {
    const chart = inputWaitData(input);
    expect(chart.labels).toEqual(input.steps.map((step) => String(step.step)));
    const [wait, other] = chart.datasets;
    input.steps.forEach((step, index) => {
      expect(wait!.data[index]).toBe(step.input_us);
      expect(wait!.data[index]! + other!.data[index]!).toBeCloseTo(step.step_time_us, 6);
    });
  });
  it("charts the host breakdown in the tool's order", () => {
    const chart = hostBreakdownData(input);
    expect(chart.datasets[0]!.data).toEqual(Object.values(input.host_breakdown_us));
    expect(chart.labels).toHaveLength(Object.keys(input.host_breakdown_us).length);
  });
});

describe("op type pies", () => {
  for (const side of ["Host", "Device"]) {
    it(`sums ${side} self time by type, top 10 and other`, () => {
      const rows = fos.rows.filter((row) => row.host_or_device === side);
      const byType = new Map<string, number>();
      for (const row of rows) byType.set(row.type, (byType.get(row.type) ?? 0) + row.total_self_time_us);
      const slices = opTypeSlices(fos.rows, side);
      const top = [...byType.values()].sort((a, b) => b - a);
      expect(slices.slice(0, 10).map((slice) => slice.value)).toEqual(top.slice(0, 10));
      if (byType.size > 10) {
        expect(slices).toHaveLength(11);
        expect(slices[10]!.label).toBe("other");
        expect(slices[10]!.value).toBeCloseTo(
          top.slice(10).reduce((a, b) => a + b, 0),
          6,
        );
      }
      const total = slices.reduce((sum, slice) => sum + slice.value, 0);
      expect(total).toBeCloseTo(
        rows.reduce((sum, row) => sum + row.total_self_time_us, 0),
        3,
      );
    });
  }
  it("leaves IDLE out and has no other slice when there are few types", () => {
    const slices = opTypeSlices([...fos.rows, ...fos.idle_rows], "Host", 1000);
    expect(slices.some((slice) => slice.label === "IDLE" || slice.label === "other")).toBe(false);
  });
  it("gives Chart.js labels and one dataset", () => {
    const chart = opTypePieData(fos.rows, "Device");
    expect(chart.datasets).toHaveLength(1);
    expect(chart.labels).toEqual(opTypeSlices(fos.rows, "Device").map((slice) => slice.label));
  });
});

describe("kernel labels", () => {
  it("drops void and the parameter list, keeps templates and anonymous namespaces", () => {
    expect(kernelLabel("void fft2d_c2r_32x32<float, false>(float*, float2 const*, int)")).toBe("fft2d_c2r_32x32<float, false>");
    expect(kernelLabel("void at::native::(anonymous namespace)::max_pool<float>(int, float const*)")).toBe("at::native::(anonymous namespace)::max_pool<float>");
    expect(kernelLabel("volta_sgemm_64x64_nt")).toBe("volta_sgemm_64x64_nt");
    // A name cut short by the tracer ends without its ")": nothing to drop.
    expect(kernelLabel("void k<int>(int, fl")).toBe("k<int>(int, fl");
  });
  it("cuts long names at the limit with an ellipsis", () => {
    const label = kernelLabel(`void ${"a".repeat(100)}(int)`, 10);
    expect(label).toBe(`${"a".repeat(9)}…`);
    expect(label).toHaveLength(10);
  });
});

describe("top kernels pie", () => {
  const gpu = overview.gpus[0]!;
  it("charts the tool's slices in its order, other last and grey", () => {
    const chart = topKernelsPieData(gpu);
    expect(chart.datasets).toHaveLength(1);
    expect(chart.datasets[0]!.data).toEqual(gpu.top_kernels.map((slice) => slice.total_duration_us));
    expect(chart.labels).toHaveLength(gpu.top_kernels.length);
    const last = gpu.top_kernels.length - 1;
    expect(gpu.top_kernels[last]!.other).toBe(true);
    expect(chart.labels[last]).toBe("other");
    const colors = chart.datasets[0]!.backgroundColor as string[];
    expect(colors[last]).toBe("#9e9e9e");
    expect(new Set(colors.slice(0, last)).size).toBe(last);
  });
  it("numbers kernels whose short labels read the same", () => {
    const slice = (name: string, us: number) => ({ kernel_name: name, other: false, total_duration_us: us, total_duration_ps: us * 1e6, percent: 0 });
    const chart = topKernelsPieData({ ...gpu, top_kernels: [slice("void k<1>(int)", 3), slice("void k<1>(float)", 2)] });
    expect(chart.labels).toEqual(["k<1>", "k<1> (2)"]);
  });
});

describe("memory timeline", () => {
  it("puts time in ms on x and allocated bytes on y", () => {
    const device = memory.devices[1]!;
    const chart = memoryTimelineData(device);
    expect(chart.datasets.map((dataset) => dataset.key)).toEqual(["allocated_bytes", "peak"]);
    expect(chart.datasets[0]!.data).toEqual(device.timeline.map((point) => ({ x: point.time_us / 1000, y: point.allocated_bytes })));
  });
  it("adds reserved memory where the source records it", () => {
    const device = memoryTpu.devices[0]!;
    const chart = memoryTimelineData(device);
    expect(chart.datasets.map((dataset) => dataset.key)).toEqual(["allocated_bytes", "reserved_bytes", "peak"]);
    expect(chart.datasets[1]!.data).toHaveLength(device.timeline.filter((point) => point.reserved_bytes !== null).length);
  });
});

describe("bytes axis", () => {
  it("steps in whole binary units", () => {
    const gib = 1024 ** 3;
    expect(byteTickStep(15 * gib)).toBe(2 * gib);
    expect(byteTickStep(57803520)).toBe(10 * 1024 ** 2);
    expect(byteTickStep(700)).toBe(100);
    expect(byteTickStep(0)).toBeUndefined();
  });
});
