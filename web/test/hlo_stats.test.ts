import { describe, expect, it } from "vitest";
import type { ApiTable } from "../src/api";
import type { HloOpRow } from "../src/generated/hlo_stats";
import { categoryChartData } from "../src/pages/hlo_stats";
import { categoryTimes, filterChoices, filterFromParams, filterRows, filterTable, NO_FILTER, summarize, withFilter } from "../src/state/hlo_stats";

function row(rank: number, program: string, category: string, name: string, selfPs: number, timePs: number, flops: number | null, bound: string | null): HloOpRow {
  return {
    rank, program, program_id: "", category, name, expression: "", occurrences: rank,
    total_time_ps: timePs, total_time_us: timePs / 1e6, avg_time_us: 0, total_self_time_ps: selfPs, total_self_time_us: selfPs / 1e6,
    avg_self_time_us: 0, self_time_percent: 0, cumulative_self_time_percent: 0, flops, bytes_accessed: null,
    gflops_per_second: null, memory_bandwidth_gb_per_second: null, operational_intensity: null, bound_by: bound,
  };
} // prettier-ignore

// Self times 6, 3, 1 us (10 us in all); total times 8, 4, 1 us.
const ROWS = [
  row(1, "jit_f(1)", "loop fusion", "fusion.1", 6_000_000, 8_000_000, 16e6, "Memory"),
  row(2, "jit_g(2)", "convolution", "conv.2", 3_000_000, 4_000_000, 4e6, "Compute"),
  row(3, "jit_f(1)", "convolution", "conv.3", 1_000_000, 1_000_000, null, null),
];

describe("hlo_stats filters", () => {
  it("offers each category and program once, sorted", () => {
    expect(filterChoices(ROWS)).toEqual({ categories: ["convolution", "loop fusion"], programs: ["jit_f(1)", "jit_g(2)"] });
  });
  it("keeps the rows of the chosen category and program, in order", () => {
    expect(filterRows(ROWS, NO_FILTER).map((r) => r.rank)).toEqual([1, 2, 3]);
    expect(filterRows(ROWS, { category: "convolution", program: "" }).map((r) => r.rank)).toEqual([2, 3]);
    expect(filterRows(ROWS, { category: "convolution", program: "jit_f(1)" }).map((r) => r.rank)).toEqual([3]);
    expect(filterRows(ROWS, { category: "loop fusion", program: "jit_g(2)" })).toEqual([]);
  });
  it("narrows the tables API's rows by their category and program columns", () => {
    const columns = ["rank", "program", "category", "name"].map((key) => ({ key, label: key, kind: key === "rank" ? "number" : "string" }));
    const table: ApiTable = { name: "hlo_ops", columns, rows: ROWS.map((r) => [r.rank, r.program, r.category, r.name]) };
    expect(filterTable(table, { category: "", program: "jit_f(1)" }).rows).toEqual([
      [1, "jit_f(1)", "loop fusion", "fusion.1"],
      [3, "jit_f(1)", "convolution", "conv.3"],
    ]);
    expect(filterTable(table, NO_FILTER).rows).toHaveLength(3);
  });
  it("reads and writes the filter in the address, dropping values no row has", () => {
    const choices = filterChoices(ROWS);
    const params = withFilter(new URLSearchParams("run=r&tool=hlo_stats"), { category: "convolution", program: "" });
    expect(params.toString()).toBe("run=r&tool=hlo_stats&hlo_category=convolution");
    expect(filterFromParams(params, choices)).toEqual({ category: "convolution", program: "" });
    expect(filterFromParams(new URLSearchParams("hlo_category=gone&hlo_program=jit_g(2)"), choices)).toEqual({ category: "", program: "jit_g(2)" });
    expect(withFilter(params, NO_FILTER).toString()).toBe("run=r&tool=hlo_stats");
  });
});

describe("hlo_stats sums", () => {
  it("totals the shown rows: time, FLOP rate, bound shares by self time", () => {
    const all = summarize(ROWS);
    expect(all.self_time_ps).toBe(10_000_000);
    expect(all.self_time_us).toBe(10);
    expect(all.occurrences).toBe(6);
    // FLOPs 16e6 + 4e6 = 20e6 over the total time of the rows with FLOPs, 12 us:
    // 20e6 / 12e-6 s = 1.6667e12 FLOP/s = 1666.67 GFLOP/s.
    expect(all.gflops_per_second).toBeCloseTo(20e6 / 12e-6 / 1e9, 9);
    expect(all.bound_percent).toEqual({ Memory: 60, Compute: 30, Unknown: 10 });
    const conv = summarize(filterRows(ROWS, { category: "convolution", program: "" }));
    expect(conv.bound_percent).toEqual({ Compute: 75, Unknown: 25 });
    expect(summarize([]).gflops_per_second).toBeNull();
    expect(summarize([ROWS[2]!]).gflops_per_second).toBeNull();
  });
  it("sums self time per category, most first", () => {
    expect(categoryTimes(ROWS)).toEqual([
      { category: "loop fusion", time_us: 6 },
      { category: "convolution", time_us: 4 },
    ]);
  });
  it("gives the pie one slice per category of the filtered rows", () => {
    const chart = categoryChartData({ device: "all", devices: [], peaks: [], ridge_point: null, total_self_time_ps: 1e7, total_self_time_us: 10, rows: ROWS }, { category: "", program: "jit_f(1)" });
    expect(chart.labels).toEqual(["loop fusion", "convolution"]);
    expect(chart.datasets[0]!.data).toEqual([6, 1]);
  });
});
