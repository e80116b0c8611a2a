import { describe, expect, it } from "vitest";
import type { RunInfo } from "../src/api";
import type { StepPair } from "../src/generated/diff";
import {
  baseLabel,
  baseOf,
  baseValue,
  firstSteadyPair,
  intervalText,
  isPairView,
  isStepScale,
  neighbourPair,
  pairOptions,
  pairTraceAddresses,
  pairViewAddress,
  pairWindows,
  parseBaseValue,
  baseCandidates,
  findBase,
  pickPair,
  sameBase,
  signedPercent,
  steadyPairIndices,
  steadyTimes,
  stepSeries,
  stepWindow,
} from "../src/state/compare";

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

describe("the paired trace view's state", () => {
  // Pair 0: base step 0 set aside; 1: both steady; 2 and 3: one side only; 4: both steady.
  const steps = [pair(0, 0, 40, 15, "outlier"), pair(1, 1, 10, 17), pair(5, null, 14, null), pair(null, 9, null, 3), pair(2, 2, 11, 16)];
  it("offers the steady pairs only, and reads the wanted one from the options", () => {
    expect(steadyPairIndices({ steps })).toEqual([1, 4]);
    expect(pickPair({ steps }, { pair: "4" })).toBe(4);
    expect(pickPair({ steps }, { pair: "0" })).toBe(1); // set aside: the first steady one instead
    expect(pickPair({ steps }, { pair: "x" })).toBe(1);
    expect(pickPair({ steps }, undefined)).toBe(1);
    expect(pickPair({ steps: [steps[0]!, steps[2]!] }, { pair: "0" })).toBeNull();
    expect(isPairView({ pair: "4" })).toBe(true);
    expect(isPairView({ pair: "" })).toBe(false);
    expect(isPairView({ base_run: "a" })).toBe(false);
  });
  it("moves to the next and previous steady pair, stopping at the ends", () => {
    expect(neighbourPair([1, 4], 1, 1)).toBe(4);
    expect(neighbourPair([1, 4], 4, 1)).toBe(4);
    expect(neighbourPair([1, 4], 1, -1)).toBe(1);
    expect(neighbourPair([1, 4], 4, -1)).toBe(1);
    expect(neighbourPair([1, 4], 3, 1)).toBe(1); // not a steady pair: the first
    expect(neighbourPair([], 0, 1)).toBeNull();
  });
  it("names the pair in a shareable address of the compare tool", () => {
    const base = { run: "a", host: "h1" };
    expect(pairOptions(base, 4)).toEqual({ base_run: "a", base_host: "h1", pair: "4" });
    expect(pairOptions(base, 4, true)).toEqual({ base_run: "a", base_host: "h1", pair: "4", scale: "step" });
    expect(isStepScale(pairOptions(base, 4, true))).toBe(true);
    expect(isStepScale(pairOptions(base, 4))).toBe(false);
    expect(pairViewAddress({ run: "gpu", host: "v100" }, base, 4)).toBe("?run=gpu&host=v100&tool=diff&base_run=a&base_host=h1&pair=4");
    expect(sameBase(base, { run: "a", host: "h1" })).toBe(true);
    expect(sameBase(base, { run: "a", host: "h2" })).toBe(false);
    expect(sameBase(base, null)).toBe(false);
  });
  it("opens each viewer on its own step of the pair", () => {
    // Pair 4: base step 2 starts at 2 * 1000 ps and lasts 11 us = 11e6 ps; new step 2 at
    // 2 * 2000 ps, 16 us.
    expect(stepWindow(steps[4]!, "base")).toEqual({ start_ps: 2000, end_ps: 11_002_000 });
    expect(stepWindow(steps[4]!, "new")).toEqual({ start_ps: 4000, end_ps: 16_004_000 });
    expect(stepWindow(steps[3]!, "base")).toBeNull();
    // Each step filling its viewer: the two windows above.
    expect(pairWindows(steps[4]!, true)).toEqual({ base: { start_ps: 2000, end_ps: 11_002_000 }, new: { start_ps: 4000, end_ps: 16_004_000 } });
    // One scale: both as long as the longer step (new, 16e6 ps), each from its own start.
    expect(pairWindows(steps[4]!, false)).toEqual({ base: { start_ps: 2000, end_ps: 16_002_000 }, new: { start_ps: 4000, end_ps: 16_004_000 } });
    expect(pairWindows(steps[3]!, false)).toBeNull();
  });
  it("takes each run's steady step times for the histogram", () => {
    // Base: step 0 set aside, steps 1, 5, 2 -> 10, 14, 11; new: 0, 1, 9, 2 -> 15, 17, 3, 16.
    expect(steadyTimes({ steps })).toEqual({ base: [10, 14, 11], new: [15, 17, 3, 16] });
  });
});

describe("compare state", () => {
  it("round-trips a base through the select's value, and reads it from options", () => {
    const base = { run: "tpu/2024 05", host: "h&1" };
    expect(parseBaseValue(baseValue(base))).toEqual(base);
    expect(baseValue(null)).toBe("");
    expect(parseBaseValue("")).toBeNull();
    expect(baseOf({ base_run: "a", base_host: "h1" })).toEqual({ run: "a", host: "h1" });
    expect(baseOf({ base_run: "a" })).toBeNull();
  });
  it("finds the named base, and offers the others without picking one", () => {
    expect(findBase(runs, { run: "a", host: "h1" })).toEqual({ run: "a", host: "h1" });
    // Not there (an unknown run, or a host of another run): no base, nothing picked instead.
    expect(findBase(runs, { run: "nope", host: "x" })).toBeNull();
    expect(findBase(runs, { run: "a", host: "v100" })).toBeNull();
    expect(findBase(runs, null)).toBeNull();
    // This run's other host first, then the other runs; never the current one.
    expect(baseCandidates(runs, { run: "gpu", host: "v100" })).toEqual([
      { run: "gpu", host: "alexnet_small" },
      { run: "a", host: "h1" },
    ]);
    expect(baseCandidates(runs, { run: "a", host: "h1" })).toEqual([
      { run: "gpu", host: "alexnet_small" },
      { run: "gpu", host: "v100" },
    ]);
    expect(baseCandidates([{ name: "a", hosts: ["h1"] }], { run: "a", host: "h1" })).toEqual([]);
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
