/**
 * The trace viewer's input as data, free of the DOM: which key does what, held W/A/S/D
 * turned into zoom and pan per frame, the wheel, and mouse drags (pan, range selection,
 * timing, section headers) from press to release. input.ts feeds browser events in and
 * hands what comes out to the viewer.
 */

import { AXIS_HEIGHT, GUTTER_WIDTH, type AreaMark } from "./render";
import { panBy, zoomAt, type TimeRange } from "./timeline";
import type { ViewState } from "./view_state";

export const ZOOM_RATE = 2.2; // e-folds of the view's length per second while W/S are held
export const PAN_RATE = 0.9; // view widths per second while A/D are held
export const ACCELERATION_S = 0.6; // holding longer speeds up, to 2.5x after this long
export const MIN_HOLD_MS = 140; // a tap moves as much as a hold this long
export const DRAG_SLOP_PX = 3;

export const MOTION_KEYS: ReadonlySet<string> = new Set(["w", "a", "s", "d"]);

/** The keys that act once per press. */
export type Command = "reset" | "select-tool" | "timing-tool" | "frame" | "search" | "clear";

const COMMANDS: Record<string, Command> = {
  "0": "reset",
  "1": "select-tool",
  "2": "timing-tool",
  f: "frame",
  "/": "search",
  Escape: "clear",
};

/** `KeyboardEvent.key` as the bindings name it: letters lower case. */
export function keyName(key: string): string {
  return key.length === 1 ? key.toLowerCase() : key;
}

export function commandFor(key: string): Command | null {
  return Object.hasOwn(COMMANDS, key) ? (COMMANDS[key] as Command) : null;
}

/** W/A/S/D held down: when each went down and when it lets go (a tap lasts MIN_HOLD_MS). */
export class HeldKeys {
  private readonly held = new Map<string, { since: number; until: number }>();

  get size(): number {
    return this.held.size;
  }

  /** Whether `key` went down now (false: already held, an auto-repeat). */
  press(key: string, now: number): boolean {
    if (this.held.has(key)) return false;
    this.held.set(key, { since: now, until: Number.POSITIVE_INFINITY });
    return true;
  }

  release(key: string, now: number): void {
    const hold = this.held.get(key);
    if (hold) hold.until = Math.max(now, hold.since + MIN_HOLD_MS);
  }

  clear(): void {
    this.held.clear();
  }

  /**
   * The motion at `now`: zoom (< 0 in) and pan (< 0 earlier) in units of their rates,
   * each key boosted by how long it has been held; keys past their release are dropped.
   */
  motion(now: number): { zoom: number; pan: number } {
    let zoom = 0;
    let pan = 0;
    for (const [key, hold] of this.held) {
      const boost = 1 + 1.5 * Math.min(1, (now - hold.since) / 1000 / ACCELERATION_S);
      if (key === "w") zoom -= boost;
      else if (key === "s") zoom += boost;
      else if (key === "a") pan -= boost;
      else if (key === "d") pan += boost;
      if (now >= hold.until) this.held.delete(key);
    }
    return { zoom, pan };
  }
}

/** `view` after `dt` seconds of `motion`, zooming around `anchor`. */
export function moved(view: TimeRange, motion: { zoom: number; pan: number }, dt: number, anchor: number, span_ps: number): TimeRange {
  let next = view;
  if (motion.zoom !== 0) next = zoomAt(next, Math.exp(motion.zoom * ZOOM_RATE * dt), anchor, span_ps);
  if (motion.pan !== 0) next = panBy(next, motion.pan * PAN_RATE * dt * (next.end_ps - next.start_ps), span_ps);
  return next;
}

// ---------------------------------------------------------------- wheel

export interface WheelInput {
  deltaX: number;
  deltaY: number;
  /** WheelEvent.deltaMode: 0 pixels, 1 lines, 2 pages. */
  deltaMode: number;
  ctrlKey: boolean;
  metaKey: boolean;
  shiftKey: boolean;
}

/** What a wheel turn does: zoom by a factor at the anchor, or pan (CSS px) and scroll (px). */
export type WheelAction = { kind: "zoom"; factor: number } | { kind: "move"; panPx: number; scrollPx: number };

export function wheelAction(wheel: WheelInput, pageHeight: number): WheelAction {
  const unit = wheel.deltaMode === 1 ? 16 : wheel.deltaMode === 2 ? pageHeight : 1;
  const dx = wheel.deltaX * unit;
  const dy = wheel.deltaY * unit;
  // Perfetto: ctrl+wheel (and trackpad pinch, which arrives as ctrl+wheel) zooms.
  if (wheel.ctrlKey || wheel.metaKey) return { kind: "zoom", factor: Math.exp(Math.max(-1, Math.min(1, dy * 0.004))) };
  if (wheel.shiftKey) return { kind: "move", panPx: dy || dx, scrollPx: 0 };
  return { kind: "move", panPx: dx, scrollPx: dy };
}

// ---------------------------------------------------------------- drags

export type Drag =
  | { kind: "pan"; x0: number; y0: number; view0: TimeRange; scroll0: number; vertical: boolean; moved: boolean }
  | { kind: "select"; x0: number; y0: number; moved: boolean }
  | { kind: "timing"; t0: number; moved: boolean }
  | { kind: "section"; section: number; name: string; moved: boolean; x0: number; y0: number };

/** Whether a press of mouse `button` at (x, y) grabs the timeline to pan it (the middle button, or on the axis). */
export function grabsTimeline(x: number, y: number, button: number): boolean {
  return button === 1 || (y < AXIS_HEIGHT && x >= GUTTER_WIDTH);
}

/**
 * The drag a press of mouse `button` at (x, y) starts: the middle button or the axis pans,
 * a section header toggles on release, the track names scroll, the plot selects or times.
 * null: the press starts nothing (the drag in progress, if any, goes on).
 */
export function startDrag(state: ViewState, x: number, y: number, button: number): Drag | null {
  if (grabsTimeline(x, y, button)) {
    return { kind: "pan", x0: x, y0: y, view0: state.view, scroll0: state.scrollTop, vertical: button === 1, moved: false };
  }
  if (y < AXIS_HEIGHT) return null;
  const hit = state.layout.hit(y - AXIS_HEIGHT + state.scrollTop);
  if (hit?.kind === "section") {
    return { kind: "section", section: hit.section, name: state.layout.sections[hit.section] as string, moved: false, x0: x, y0: y };
  }
  // Dragging the track names scrolls vertically.
  if (x < GUTTER_WIDTH) return { kind: "pan", x0: x, y0: y, view0: state.view, scroll0: state.scrollTop, vertical: true, moved: false };
  if (state.tool === "timing") return { kind: "timing", t0: state.timeAt(x), moved: false };
  return { kind: "select", x0: x, y0: y, moved: false };
}

/** What moving a drag to (x, y) does (`moved` is set past DRAG_SLOP_PX). */
export interface DragStep {
  view?: TimeRange;
  scrollTop?: number;
  area?: AreaMark;
  timing?: TimeRange;
}

export function moveDrag(drag: Drag, x: number, y: number, state: ViewState): DragStep {
  switch (drag.kind) {
    case "pan": {
      const dx = x - drag.x0;
      const dy = y - drag.y0;
      if (Math.abs(dx) + Math.abs(dy) > DRAG_SLOP_PX) drag.moved = true;
      const step: DragStep = {};
      if (drag.x0 >= GUTTER_WIDTH) step.view = panBy(drag.view0, -dx * state.psPerPx(drag.view0), state.span);
      if (drag.vertical) step.scrollTop = drag.scroll0 - dy;
      return step;
    }
    case "select": {
      if (!drag.moved && Math.abs(x - drag.x0) + Math.abs(y - drag.y0) <= DRAG_SLOP_PX) return {};
      drag.moved = true;
      const t0 = state.timeAt(drag.x0);
      const t1 = state.timeAt(Math.max(GUTTER_WIDTH, Math.min(state.width, x)));
      const c0 = drag.y0 - AXIS_HEIGHT + state.scrollTop;
      const c1 = Math.max(AXIS_HEIGHT, Math.min(state.height, y)) - AXIS_HEIGHT + state.scrollTop;
      return { area: { start_ps: Math.min(t0, t1), end_ps: Math.max(t0, t1), top: Math.min(c0, c1), bottom: Math.max(c0, c1) + 1 } };
    }
    case "timing": {
      const t = state.timeAt(Math.max(GUTTER_WIDTH, Math.min(state.width, x)));
      if (!drag.moved && Math.abs(state.xOf(t) - state.xOf(drag.t0)) <= DRAG_SLOP_PX) return {};
      drag.moved = true;
      return { timing: { start_ps: Math.min(drag.t0, t), end_ps: Math.max(drag.t0, t) } };
    }
    case "section":
      if (Math.abs(x - drag.x0) + Math.abs(y - drag.y0) > DRAG_SLOP_PX) drag.moved = true;
      return {};
  }
}

/** What releasing a drag does: toggle a section, summarize the dragged range, or click. */
export type DragEnd = { kind: "toggle"; name: string } | { kind: "summarize"; area: AreaMark } | { kind: "click" } | null;

export function endDrag(drag: Drag, area: AreaMark | null): DragEnd {
  if (drag.kind === "section") return drag.moved ? null : { kind: "toggle", name: drag.name };
  if (drag.kind === "select") return drag.moved && area ? { kind: "summarize", area } : { kind: "click" };
  return null;
}
