import { describe, expect, it } from "vitest";
import {
  centreOn,
  clampView,
  covers,
  formatDuration,
  formatStartMs,
  holdsAll,
  MAX_WIDTH_PX,
  MIN_VIEW_PS,
  panBy,
  rangeFromSearch,
  requestFor,
  sameParams,
  tickLabel,
  tickStep,
  wholeProfile,
  zoomAt,
} from "../src/trace/timeline";

const SPAN = 597_891_386_000; // the v100 fixture's span

describe("the visible range", () => {
  it("stays inside the profile, keeping its length when it slides past an edge", () => {
    expect(clampView({ start_ps: -50_000, end_ps: 150_000 }, 1e6)).toEqual({ start_ps: 0, end_ps: 200_000 });
    expect(clampView({ start_ps: 900_000, end_ps: 1_100_000 }, 1e6)).toEqual({ start_ps: 800_000, end_ps: 1e6 });
    expect(clampView({ start_ps: -10, end_ps: 5e6 }, 1e6)).toEqual({ start_ps: 0, end_ps: 1e6 });
    expect(clampView({ start_ps: 5, end_ps: 5 }, 1e6)).toEqual({ start_ps: 0, end_ps: 1e6 });
    // A profile shorter than MIN_VIEW_PS is shown whole.
    expect(clampView({ start_ps: 10, end_ps: 20 }, 500)).toEqual({ start_ps: 0, end_ps: 500 });
    expect(clampView({ start_ps: 0, end_ps: 10 }, SPAN)).toEqual({ start_ps: 0, end_ps: MIN_VIEW_PS });
    expect(wholeProfile(0)).toEqual({ start_ps: 0, end_ps: 1 });
  });

  it("zooms around the anchor: the time under the mouse stays under it", () => {
    const view = { start_ps: 1e9, end_ps: 3e9 };
    const anchor = 0.25;
    const at = view.start_ps + (view.end_ps - view.start_ps) * anchor;
    const zoomed = zoomAt(view, 0.5, anchor, SPAN);
    expect(zoomed.end_ps - zoomed.start_ps).toBeCloseTo(1e9, 3);
    expect(zoomed.start_ps + (zoomed.end_ps - zoomed.start_ps) * anchor).toBeCloseTo(at, 3);
    // Out past the whole profile: the whole profile.
    expect(zoomAt(view, 1e6, 0.5, SPAN)).toEqual({ start_ps: 0, end_ps: SPAN });
    // In past the limit: MIN_VIEW_PS.
    const deep = zoomAt(view, 1e-12, 0.5, SPAN);
    expect(deep.end_ps - deep.start_ps).toBe(MIN_VIEW_PS);
  });

  it("pans and stops at the edges", () => {
    expect(panBy({ start_ps: 100e3, end_ps: 200e3 }, 50e3, 1e6)).toEqual({ start_ps: 150e3, end_ps: 250e3 });
    expect(panBy({ start_ps: 100e3, end_ps: 200e3 }, -500e3, 1e6)).toEqual({ start_ps: 0, end_ps: 100e3 });
    expect(panBy({ start_ps: 100e3, end_ps: 200e3 }, 5e6, 1e6)).toEqual({ start_ps: 900e3, end_ps: 1e6 });
  });

  it("centres on an event, zooming only when it would be too wide or too thin", () => {
    const view = { start_ps: 1e9, end_ps: 1e9 + 1e6 };
    const same = centreOn(view, 5e9, 20_000, SPAN, 1000);
    expect(same.end_ps - same.start_ps).toBe(1_000_000);
    expect((same.start_ps + same.end_ps) / 2).toBe(5e9 + 10_000);
    // Near the start: as centred as the profile's edge allows.
    expect(centreOn(view, 1000, 20_000, SPAN, 1000)).toEqual({ start_ps: 0, end_ps: 1e6 });
    const wide = centreOn(view, 0, 2_000_000, SPAN, 1000);
    expect(wide.end_ps - wide.start_ps).toBeGreaterThan(2_000_000);
    const thin = centreOn(view, 5e9, 100, SPAN, 1000, 10);
    expect(((thin.end_ps - thin.start_ps) / 1000) * 10).toBeCloseTo(100, 6); // 10 px wide
  });

  it("reads a deep link's range, ignoring anything malformed", () => {
    expect(rangeFromSearch("?run=a&start_ps=100&end_ps=5000", 1e6)).toEqual({ start_ps: 100, end_ps: 5000 });
    expect(rangeFromSearch("?start_ps=100&end_ps=2000000", 1e6)).toEqual({ start_ps: 0, end_ps: 1e6 });
    expect(rangeFromSearch("?start_ps=100", 1e6)).toBeNull();
    expect(rangeFromSearch("?start_ps=9&end_ps=1", 1e6)).toBeNull();
    expect(rangeFromSearch("?start_ps=-1&end_ps=10", 1e6)).toBeNull();
    expect(rangeFromSearch("?start_ps=1e3&end_ps=10", 1e6)).toBeNull();
  });
});

describe("axis and text", () => {
  it("picks 1/2/5 steps at least the minimum spacing apart", () => {
    expect(tickStep(1, 90)).toBe(100);
    expect(tickStep(1e6, 90)).toBe(1e8);
    expect(tickStep(3e6, 90)).toBe(5e8);
    expect(tickStep(1.2e6, 90)).toBe(2e8);
    for (const psPerPx of [0.3, 7, 123, 4.5e4, 9.9e9]) {
      const step = tickStep(psPerPx, 90);
      expect(step / psPerPx).toBeGreaterThanOrEqual(90);
      expect(step / psPerPx / 90).toBeLessThanOrEqual(2.5);
    }
  });

  it("labels ticks in the step's unit, as precise as the step", () => {
    expect(tickLabel(2e9, 1e9)).toBe("2 ms");
    expect(tickLabel(2.5e9, 5e8)).toBe("2.5 ms");
    expect(tickLabel(1.23e9, 1e7)).toBe("1.23 ms");
    expect(tickLabel(4e6, 2e6)).toBe("4 µs");
    expect(tickLabel(3e12, 1e12)).toBe("3 s");
    expect(tickLabel(0, 100)).toBe("0 ps");
    expect(tickLabel(300_000_012_000, 1000)).toBe("300000.012 µs");
  });

  it("writes durations with three significant digits", () => {
    expect(formatDuration(35_115_869_000)).toBe("35.1 ms");
    expect(formatDuration(4_928_000)).toBe("4.93 µs");
    expect(formatDuration(870_000)).toBe("870 ns");
    expect(formatDuration(1.5e12)).toBe("1.50 s");
    expect(formatDuration(0)).toBe("0 s");
    expect(formatStartMs(95_341_768_000)).toBe("95.341768 ms");
  });
});

describe("what to ask the server", () => {
  const tracks = [0, 2, 7];

  it("asks for the view and half a view each side at screen density", () => {
    const params = requestFor({ start_ps: 1000e6, end_ps: 2000e6 }, 1000, SPAN, tracks, false);
    expect(params).toEqual({ start_ps: 500e6, end_ps: 2500e6, width_px: 2000, tracks, all: false, filter: "" });
  });

  it("clamps to the profile and the server's pixel cap", () => {
    const whole = requestFor({ start_ps: 0, end_ps: SPAN }, 1200, SPAN, tracks, true);
    expect(whole).toMatchObject({ start_ps: 0, end_ps: SPAN, width_px: 1200 });
    const huge = requestFor({ start_ps: 0, end_ps: SPAN }, 50_000, SPAN, tracks, true);
    expect(huge.width_px).toBe(MAX_WIDTH_PX);
  });

  it("knows when an answer still serves the view", () => {
    const view = { start_ps: 1000e6, end_ps: 2000e6 };
    const had = requestFor(view, 1000, SPAN, tracks, false);
    expect(covers(had, view, 1000, SPAN, [0, 7])).toBe(true);
    // A small pan stays inside the overscan; a large one leaves it.
    expect(covers(had, { start_ps: 1200e6, end_ps: 2200e6 }, 1000, SPAN, [0])).toBe(true);
    expect(covers(had, { start_ps: 1400e6, end_ps: 2400e6 }, 1000, SPAN, [0])).toBe(false);
    // Zooming in or out past the tolerance needs another density.
    expect(covers(had, { start_ps: 1300e6, end_ps: 1700e6 }, 1000, SPAN, [0])).toBe(false);
    // A track it was not asked for.
    expect(covers(had, view, 1000, SPAN, [0, 5])).toBe(false);
    expect(covers({ ...had, all: true }, view, 1000, SPAN, [0, 5])).toBe(true);
    // A wider canvas: denser pixels.
    expect(covers(had, view, 2000, SPAN, [0])).toBe(false);
    // Another name filter.
    expect(covers(had, view, 1000, SPAN, [0], "conv")).toBe(false);
    expect(covers(requestFor(view, 1000, SPAN, tracks, false, "conv"), view, 1000, SPAN, [0], "conv")).toBe(true);
  });

  it("compares requests and track lists", () => {
    const a = requestFor({ start_ps: 0, end_ps: 1e9 }, 800, SPAN, [1, 2], false);
    expect(sameParams(a, { ...a, tracks: [1, 2] })).toBe(true);
    expect(sameParams(a, { ...a, tracks: [1, 3] })).toBe(false);
    expect(sameParams(a, { ...a, width_px: 801 })).toBe(false);
    expect(sameParams(a, { ...a, filter: "x" })).toBe(false);
    expect(sameParams(null, null)).toBe(true);
    expect(sameParams(a, null)).toBe(false);
    expect(holdsAll([1, 2, 5, 9], [2, 9])).toBe(true);
    expect(holdsAll([1, 2, 5, 9], [3])).toBe(false);
    expect(holdsAll([], [])).toBe(true);
  });
});
