import { describe, expect, it } from "vitest";
import type { RunInfo } from "../src/api";
import type { StepPair } from "../src/generated/diff";
import { baseLabel, baseOf, baseValue, COMPARE_INFO, firstSteadyPair, intervalText, pairTraceAddresses, parseBaseValue, pickBase, signedPercent, stepSeries, withCompare } from "../src/state/compare";

const runs: RunInfo[] = [
  { name: "a", hosts: ["h1"] },
  { name: "gpu", hosts: ["alexnet_small", "v100"] },
];

function pair(base_step: number | null, new_step: number | null, base_us: number | null, new_us: number | null, setAside: string | null = null): StepPair {
  return {
    base_step,
    new_step,
    base_us,
    new_us,
    change_us: base_us !== null && new_us !== null ? new_us - base_us : null,
    change_percent: null,
    base_set_aside: setAside,
    new_set_aside: null,
    base_start_ps: base_step === null ? null : base_step * 1000,
    new_start_ps: new_step === null ? null : new_step * 2000,
    base_step_ps: base_us === null ? null : base_us * 1e6,
    new_step_ps: new_us === null ? null : new_us * 1e6,
  };
}

describe("compare state", () => {
  it("adds Compare to the tool menu once", () => {
    expect(withCompare([]).map((tool) => tool.name)).toEqual(["diff"]);
    expect(withCompare([COMPARE_INFO])).toHaveLength(1);
    expect(COMPARE_INFO.options.map((option) => option.name)).toEqual(["base_run", "base_host"]);
  });
  it("round-trips a base through the select's value, and reads it from options", () => {
    const base = { run: "tpu/2024 05", host: "h&1" };
    expect(parseBaseValue(baseValue(base))).toEqual(base);
    expect(baseValue(null)).toBe("");
    expect(parseBaseValue("")).toBeNull();
    expect(baseOf({ base_run: "a", base_host: "h1" })).toEqual({ run: "a", host: "h1" });
    expect(baseOf({ base_run: "a" })).toBeNull();
  });
  it("picks the named base, else another host of the run, else another run", () => {
    expect(pickBase(runs, { run: "gpu", host: "v100" }, { run: "a", host: "h1" })).toEqual({ run: "a", host: "h1" });
    expect(pickBase(runs, { run: "gpu", host: "v100" }, { run: "nope", host: "x" })).toEqual({ run: "gpu", host: "alexnet_small" });
    expect(pickBase(runs, { run: "a", host: "h1" }, null)).toEqual({ run: "gpu", host: "alexnet_small" });
    expect(pickBase([{ name: "a", hosts: ["h1"] }], { run: "a", host: "h1" }, null)).toBeNull();
    expect(baseLabel(runs, { run: "a", host: "h1" })).toBe("a");
    expect(baseLabel(runs, { run: "gpu", host: "v100" })).toBe("gpu · v100");
  });
  it("puts both runs' step times on the aligned steps", () => {
    const steps = [pair(0, 0, 40, 15, "outlier"), pair(1, 1, 10, 17), pair(5, null, 14, null), pair(null, 9, null, 3)];
    expect(stepSeries({ steps })).toEqual({ labels: ["0", "1", "5 / –", "– / 9"], base: [40, 10, 14, null], new: [15, 17, null, 3] });
    // Step 0 of the base is set aside: the first steady pair is step 1.
    const first = firstSteadyPair({ steps });
    expect(first?.base_step).toBe(1);
    // base: start 1 * 1000 ps, 10 us = 1e7 ps long; new: start 2000 ps, 17 us.
    const links = pairTraceAddresses(first!, { run: "a", host: "h1" }, { run: "gpu", host: "v100" });
    expect(links.base).toBe("?run=a&host=h1&tool=trace_viewer&start_ps=1000&end_ps=10001000");
    expect(links.new).toBe("?run=gpu&host=v100&tool=trace_viewer&start_ps=2000&end_ps=17002000");
  });
  it("writes signed changes and intervals", () => {
    expect(signedPercent(41.666)).toBe("+41.7%");
    expect(signedPercent(-2)).toBe("-2.0%");
    expect(signedPercent(null)).toBe("n/a");
    expect(intervalText({ ci_low_percent: 8.3, ci_high_percent: 75, significant: true })).toBe("95% CI +8.3% to +75.0%");
    expect(intervalText({ ci_low_percent: null, ci_high_percent: null, significant: null })).toBe("one steady step: noise not measured");
  });
});
