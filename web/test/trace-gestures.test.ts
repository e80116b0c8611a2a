import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { TracksInfo } from "../src/trace/api";
import {
  ACCELERATION_S,
  commandFor,
  DRAG_SLOP_PX,
  endDrag,
  grabsTimeline,
  HeldKeys,
  keyName,
  MIN_HOLD_MS,
  moveDrag,
  moved,
  PAN_RATE,
  startDrag,
  wheelAction,
  ZOOM_RATE,
  type Drag,
} from "../src/trace/gestures";
import { AXIS_HEIGHT, GUTTER_WIDTH } from "../src/trace/render";
import { ViewState } from "../src/trace/view_state";

const fixture = (name: string): string => new URL(`./fixtures/${name}`, import.meta.url).pathname;
const info = JSON.parse(readFileSync(fixture("trace_tracks_v100.json"), "utf8")) as TracksInfo;
const SPAN = info.span_ps;

function sized(): ViewState {
  const state = new ViewState(info, { start_ps: 1e9, end_ps: 3e9 });
  state.resize(1232, 600, 1);
  return state;
}

/** A y on the first track's lane (below the first section header). */
const laneY = (state: ViewState): number => AXIS_HEIGHT + state.layout.laneY(info.tracks[0]!.id, 0) + 2;

describe("keys", () => {
  it("names keys as the bindings do and maps the one-shot ones to commands", () => {
    expect(keyName("W")).toBe("w");
    expect(keyName("Escape")).toBe("Escape");
    expect(commandFor("0")).toBe("reset");
    expect(commandFor("1")).toBe("select-tool");
    expect(commandFor("2")).toBe("timing-tool");
    expect(commandFor("f")).toBe("frame");
    expect(commandFor("/")).toBe("search");
    expect(commandFor("Escape")).toBe("clear");
    expect(commandFor("w")).toBeNull();
    expect(commandFor("toString")).toBeNull();
  });

  it("holds W/A/S/D until released, a tap for at least MIN_HOLD_MS, faster the longer held", () => {
    const held = new HeldKeys();
    expect(held.press("w", 1000)).toBe(true);
    expect(held.press("w", 1010)).toBe(false); // auto-repeat
    expect(held.motion(1000)).toEqual({ zoom: -1, pan: 0 });
    expect(held.motion(1000 + ACCELERATION_S * 1000)).toEqual({ zoom: -2.5, pan: 0 });
    expect(held.motion(1000 + ACCELERATION_S * 5000)).toEqual({ zoom: -2.5, pan: 0 });
    held.press("d", 1000);
    held.release("w", 1020);
    // Released after 20 ms: moves on until MIN_HOLD_MS, then lets go.
    expect(held.motion(1000 + MIN_HOLD_MS - 1).zoom).toBeLessThan(0);
    expect(held.size).toBe(2);
    const last = held.motion(1000 + MIN_HOLD_MS);
    expect(last.zoom).toBeLessThan(0);
    expect(last.pan).toBeGreaterThan(0);
    expect(held.size).toBe(1);
    held.press("a", 2000);
    held.press("s", 2000);
    expect(held.motion(2000)).toMatchObject({ zoom: 1 });
    held.release("q", 2000);
    held.clear();
    expect(held.size).toBe(0);
    expect(held.motion(3000)).toEqual({ zoom: 0, pan: 0 });
  });

  it("moves the view by the held keys' rates", () => {
    const view = { start_ps: 1e9, end_ps: 3e9 };
    const zoomed = moved(view, { zoom: -1, pan: 0 }, 0.1, 0.5, SPAN);
    expect(zoomed.end_ps - zoomed.start_ps).toBeCloseTo(2e9 * Math.exp(-ZOOM_RATE * 0.1), 0);
    expect((zoomed.start_ps + zoomed.end_ps) / 2).toBeCloseTo(2e9, 0);
    const panned = moved(view, { zoom: 0, pan: 1 }, 0.1, 0.5, SPAN);
    expect(panned.start_ps).toBeCloseTo(1e9 + PAN_RATE * 0.1 * 2e9, 0);
    expect(panned.end_ps - panned.start_ps).toBeCloseTo(2e9, 0);
    expect(moved(view, { zoom: 0, pan: 0 }, 0.1, 0.5, SPAN)).toBe(view);
  });
});

describe("the wheel", () => {
  const wheel = { deltaX: 0, deltaY: 0, deltaMode: 0, ctrlKey: false, metaKey: false, shiftKey: false };

  it("zooms with ctrl (or a pinch), at most e-fold a turn", () => {
    expect(wheelAction({ ...wheel, deltaY: -100, ctrlKey: true }, 500)).toEqual({ kind: "zoom", factor: Math.exp(-0.4) });
    expect(wheelAction({ ...wheel, deltaY: 1e6, metaKey: true }, 500)).toEqual({ kind: "zoom", factor: Math.E });
  });

  it("pans with shift, else pans sideways and scrolls up and down, in lines and pages too", () => {
    expect(wheelAction({ ...wheel, deltaY: 120, shiftKey: true }, 500)).toEqual({ kind: "move", panPx: 120, scrollPx: 0 });
    expect(wheelAction({ ...wheel, deltaX: 30, shiftKey: true }, 500)).toEqual({ kind: "move", panPx: 30, scrollPx: 0 });
    expect(wheelAction({ ...wheel, deltaX: 30, deltaY: 40 }, 500)).toEqual({ kind: "move", panPx: 30, scrollPx: 40 });
    expect(wheelAction({ ...wheel, deltaY: 3, deltaMode: 1 }, 500)).toEqual({ kind: "move", panPx: 0, scrollPx: 48 });
    expect(wheelAction({ ...wheel, deltaY: 1, deltaMode: 2 }, 500)).toEqual({ kind: "move", panPx: 0, scrollPx: 500 });
  });
});

describe("drags", () => {
  it("starts the drag the press asks for", () => {
    const state = sized();
    const axis = startDrag(state, GUTTER_WIDTH + 10, 5, 0);
    expect(grabsTimeline(GUTTER_WIDTH + 10, 5, 0)).toBe(true);
    expect(axis).toMatchObject({ kind: "pan", vertical: false, view0: state.view, scroll0: 0 });
    expect(startDrag(state, GUTTER_WIDTH + 10, 300, 1)).toMatchObject({ kind: "pan", vertical: true });
    expect(grabsTimeline(GUTTER_WIDTH + 10, 300, 1)).toBe(true);
    // Above the track names: nothing.
    expect(startDrag(state, 10, 5, 0)).toBeNull();
    expect(startDrag(state, GUTTER_WIDTH + 10, AXIS_HEIGHT + 2, 0)).toMatchObject({ kind: "section", name: state.layout.sections[0] });
    expect(startDrag(state, 10, laneY(state), 0)).toMatchObject({ kind: "pan", vertical: true });
    expect(grabsTimeline(10, laneY(state), 0)).toBe(false);
    expect(startDrag(state, GUTTER_WIDTH + 10, laneY(state), 0)).toEqual({ kind: "select", x0: GUTTER_WIDTH + 10, y0: laneY(state), moved: false });
    state.tool = "timing";
    expect(startDrag(state, GUTTER_WIDTH + 10, laneY(state), 0)).toEqual({ kind: "timing", t0: state.timeAt(GUTTER_WIDTH + 10), moved: false });
  });

  it("pans the view from where it started, and scrolls when vertical", () => {
    const state = sized();
    const drag = startDrag(state, GUTTER_WIDTH + 100, 5, 0)!;
    const step = moveDrag(drag, GUTTER_WIDTH + 50, 5, state);
    expect(drag.moved).toBe(true);
    expect(step.scrollTop).toBeUndefined();
    expect(step.view!.start_ps).toBeCloseTo(1e9 + 50 * state.psPerPx(), 0);
    const middle = startDrag(state, GUTTER_WIDTH + 100, 300, 1)!;
    state.scrollTop = 40;
    expect(moveDrag(middle, GUTTER_WIDTH + 100, 290, state)).toEqual({ view: state.view, scrollTop: 10 });
    expect(middle.moved).toBe(true);
    // On the track names: only scrolls.
    state.scrollTop = 0;
    const names = startDrag(state, 10, laneY(state), 0)!;
    expect(moveDrag(names, 11, laneY(state) - 1, state)).toEqual({ scrollTop: 1 });
    expect(names.moved).toBe(false);
  });

  it("marks a range once the pointer moved past the slop, clamped to the plot", () => {
    const state = sized();
    const y = laneY(state);
    const drag = startDrag(state, GUTTER_WIDTH + 100, y, 0)!;
    expect(moveDrag(drag, GUTTER_WIDTH + 100 + DRAG_SLOP_PX, y, state)).toEqual({});
    expect(drag.moved).toBe(false);
    const step = moveDrag(drag, 5000, y + 40, state);
    expect(drag.moved).toBe(true);
    expect(step.area).toEqual({ start_ps: state.timeAt(GUTTER_WIDTH + 100), end_ps: state.timeAt(1232), top: y - AXIS_HEIGHT, bottom: y + 40 - AXIS_HEIGHT + 1 });
    // Backwards: still a forward range.
    const back = moveDrag(drag, 0, 0, state);
    expect(back.area).toEqual({ start_ps: state.timeAt(GUTTER_WIDTH), end_ps: state.timeAt(GUTTER_WIDTH + 100), top: 0, bottom: y - AXIS_HEIGHT + 1 });
    expect(endDrag(drag, back.area!)).toEqual({ kind: "summarize", area: back.area });
    expect(endDrag(drag, null)).toEqual({ kind: "click" });
    expect(endDrag({ kind: "select", x0: 0, y0: 0, moved: false }, back.area!)).toEqual({ kind: "click" });
  });

  it("measures a timing once moved past the slop", () => {
    const state = sized();
    state.tool = "timing";
    const drag = startDrag(state, GUTTER_WIDTH + 100, laneY(state), 0)!;
    expect(moveDrag(drag, GUTTER_WIDTH + 102, 0, state)).toEqual({});
    const step = moveDrag(drag, GUTTER_WIDTH + 60, 0, state);
    expect(step.timing).toEqual({ start_ps: state.timeAt(GUTTER_WIDTH + 60), end_ps: state.timeAt(GUTTER_WIDTH + 100) });
    expect(endDrag(drag, null)).toBeNull();
  });

  it("toggles a section header on a click, not on a drag", () => {
    const state = sized();
    const drag = startDrag(state, GUTTER_WIDTH + 10, AXIS_HEIGHT + 2, 0)! as Extract<Drag, { kind: "section" }>;
    expect(moveDrag(drag, GUTTER_WIDTH + 11, AXIS_HEIGHT + 3, state)).toEqual({});
    expect(endDrag(drag, null)).toEqual({ kind: "toggle", name: drag.name });
    moveDrag(drag, GUTTER_WIDTH + 30, AXIS_HEIGHT + 3, state);
    expect(endDrag(drag, null)).toBeNull();
    expect(endDrag(startDrag(state, GUTTER_WIDTH + 10, 5, 0)!, null)).toBeNull();
  });
});
