import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { TracksInfo } from "../src/trace/api";
import { FrameLoop, MAX_FRAME_SAMPLES, MAX_STEP_S, type FrameClient, type FrameClock } from "../src/trace/frame_loop";
import { HeldKeys } from "../src/trace/gestures";
import type { Scene } from "../src/trace/render";
import type { TimeRange } from "../src/trace/timeline";
import { ViewState } from "../src/trace/view_state";

const fixture = (name: string): string => new URL(`./fixtures/${name}`, import.meta.url).pathname;
const info = JSON.parse(readFileSync(fixture("trace_tracks_v100.json"), "utf8")) as TracksInfo;

/** Frames run by hand; every draw "takes" 2 ms. */
class Clock implements FrameClock {
  time = 0;
  pending: ((now: number) => void) | null = null;
  requests = 0;
  cancelled = 0;
  now(): number {
    return this.time;
  }
  request(callback: (now: number) => void): number {
    this.requests++;
    this.pending = callback;
    return this.requests;
  }
  cancel(): void {
    this.cancelled++;
    this.pending = null;
  }
  /** Runs the pending frame at `at` ms. */
  frame(at: number): void {
    const callback = this.pending;
    this.pending = null;
    this.time = at;
    callback?.(at);
  }
}

function setup() {
  const log: string[] = [];
  const state = new ViewState(info, { start_ps: 1e9, end_ps: 3e9 });
  state.resize(1232, 600, 1);
  const held = new HeldKeys();
  const clock = new Clock();
  const stats = { events: 0, runs: 0, lanes: 0, sections: [], pathMarks: 0 };
  const renderer = {
    stats,
    draw(scene: Scene): void {
      log.push(`paint ${scene.view.start_ps}`);
      clock.time += 2;
      stats.events += 1;
    },
  };
  const hover = {
    shown: false,
    setCursor: (cursor: string) => log.push(`cursor ${cursor}`),
    show: () => log.push("show"),
    hide: () => log.push("hide"),
  };
  const canvas = { setAttribute: (name: string, value: string) => log.push(`${name}=${value}`) };
  const client: FrameClient = {
    prepared: () => null,
    dragging: () => false,
    setView: (view: TimeRange) => {
      state.setView(view);
      log.push("view");
    },
    checkData: () => log.push("data"),
    drawn: () => log.push("drawn"),
  };
  const loop = new FrameLoop({ state, held, renderer, hover, canvas }, client, clock);
  return { loop, clock, log, state, held, hover };
}

describe("the frame loop", () => {
  it("asks for one frame at a time and stops when closed", () => {
    const { loop, clock, log } = setup();
    loop.request();
    loop.request();
    loop.dataChanged();
    expect(clock.requests).toBe(1);
    clock.frame(16);
    expect(log).toEqual(["paint 1000000000", "data-drawn-events=1", "data", "drawn"]);
    loop.request();
    expect(clock.requests).toBe(2);
    loop.close();
    expect(clock.cancelled).toBe(1);
    loop.request();
    loop.draw();
    expect(clock.requests).toBe(2);
    expect(log).toHaveLength(4);
  });

  it("paints, then the hover when asked or under a shown tooltip, then data when marked", () => {
    const { loop, clock, log, hover, state } = setup();
    loop.draw();
    log.length = 0;
    loop.draw();
    // Nothing marked: only the paint (the drawn count changed) and the ready check.
    expect(log).toEqual(["paint 1000000000", "data-drawn-events=2", "drawn"]);
    log.length = 0;
    loop.hoverChanged();
    loop.markData();
    clock.frame(32);
    expect(log).toEqual(["paint 1000000000", "data-drawn-events=3", "cursor default", "hide", "data", "drawn"]);
    log.length = 0;
    hover.shown = true;
    loop.draw();
    // The pointer is outside: a shown tooltip is refreshed only under the pointer.
    expect(log).not.toContain("hide");
    log.length = 0;
    state.pointer.inside = true;
    loop.draw();
    expect(log).toContain("hide");
    expect(loop.frameTimes).toEqual([2, 2, 2, 2, 2]);
  });

  it("draws nothing on an unsized canvas", () => {
    const { loop, log, state } = setup();
    state.resize(1, 1, 1);
    loop.draw();
    expect(log).toEqual([]);
  });

  it("animates held keys frame to frame, timing the gaps, with steps capped", () => {
    const { loop, clock, log, held, state } = setup();
    held.press("d", 100);
    loop.request();
    clock.frame(100);
    // The first animated frame moves a 60th of a second.
    expect(state.view.start_ps).toBeCloseTo(1e9 + 0.9 * (1 / 60) * 2e9, -3);
    expect(log.slice(0, 2)).toEqual(["view", `paint ${state.view.start_ps}`]);
    expect(loop.frameIntervals).toEqual([]);
    expect(clock.pending).not.toBeNull();
    const before = state.view.start_ps;
    clock.frame(1100);
    expect(loop.frameIntervals).toEqual([1000]);
    // A stalled second moves only MAX_STEP_S.
    expect(state.view.start_ps - before).toBeLessThan(2.5 * 0.9 * MAX_STEP_S * 2e9 * 1.001);
    held.release("d", 1100);
    clock.frame(1116);
    // Let go: no more frames; the next animation starts afresh.
    expect(clock.pending).toBeNull();
    clock.frame(2000);
    loop.request();
    clock.frame(2016);
    expect(loop.frameIntervals).toEqual([1000, 16]);
  });

  it("keeps the newest samples only", () => {
    const { loop } = setup();
    for (let at = 0; at < MAX_FRAME_SAMPLES + 10; at++) loop.draw();
    expect(loop.frameTimes).toHaveLength(MAX_FRAME_SAMPLES);
  });
});
