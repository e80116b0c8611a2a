import { describe, expect, it } from "vitest";
import { MAX_BINS, sharedHistogram, sqrtBinCount } from "../src/state/histogram";

describe("step-time histogram on shared bins (square-root rule)", () => {
  it("counts the bins as ceil(sqrt(n)), at most MAX_BINS", () => {
    expect(sqrtBinCount(0)).toBe(0);
    expect(sqrtBinCount(1)).toBe(1);
    expect(sqrtBinCount(16)).toBe(4); // sqrt 16 = 4 exactly
    expect(sqrtBinCount(17)).toBe(5); // 4.12 -> 5
    expect(sqrtBinCount(2000)).toBe(MAX_BINS); // 44.7 -> 45, capped at 40
  });

  it("bins both runs over their joint range", () => {
    // n = 4 + 5 = 9 -> 3 bins; range 10..50, width 40 / 3 = 13.33:
    // [10, 23.33) [23.33, 36.67) [36.67, 50]. Base 10, 12, 14 | 30 | -; new 20, 22 | - | 40, 41, 50.
    const histogram = sharedHistogram([10, 12, 14, 30], [20, 22, 40, 41, 50]);
    expect(histogram.bins).toHaveLength(3);
    expect(histogram.bins[0]?.start_us).toBe(10);
    expect(histogram.bins[1]?.start_us).toBeCloseTo(23.333, 3);
    expect(histogram.bins[2]?.end_us).toBe(50);
    expect(histogram.base).toEqual([3, 1, 0]);
    expect(histogram.new).toEqual([2, 0, 3]);
  });

  it("puts an edge value in the bin it starts and the maximum in the last bin", () => {
    // n = 10 -> ceil(3.16) = 4 bins over 0..8, width 2: [0,2) [2,4) [4,6) [6,8].
    // Base 0, 1 | 2, 3 | 4 | -; new - | - | 5 | 6, 7, 8, 8.
    const histogram = sharedHistogram([0, 1, 2, 3, 4], [5, 6, 7, 8, 8]);
    expect(histogram.bins.map((bin) => [bin.start_us, bin.end_us])).toEqual([
      [0, 2],
      [2, 4],
      [4, 6],
      [6, 8],
    ]);
    expect(histogram.base).toEqual([2, 2, 1, 0]);
    expect(histogram.new).toEqual([0, 0, 1, 4]);
  });

  it("has one bin when every time is the same, and none without times", () => {
    expect(sharedHistogram([5, 5], [5])).toEqual({ bins: [{ start_us: 5, end_us: 5 }], base: [2], new: [1] });
    expect(sharedHistogram([], [])).toEqual({ bins: [], base: [], new: [] });
    // One run alone: 4 times -> 2 bins over 1..4, width 1.5: [1, 2.5) [2.5, 4].
    expect(sharedHistogram([1, 2, 3, 4], [])).toMatchObject({ base: [2, 2], new: [0, 0] });
  });
});
