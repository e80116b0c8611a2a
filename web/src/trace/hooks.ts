/**
 * The trace viewer's test and benchmark hooks, `window.__stepscope.trace` while a viewer is
 * shown (the browser tests and bench/trace_viewer_page.py read them); a viewer with a name
 * (one of the paired trace view's two) puts them at `window.__stepscope.traces[name]`.
 */

import { chartRegistry } from "../components/charts";
import type { TimeRange } from "./timeline";

export interface TraceHooks {
  view(): TimeRange;
  /** What the last frame drew: counts, and the section headers on screen (top to bottom). */
  drawn(): { events: number; runs: number; lanes: number; sections: string[]; requests: number };
  eventAt(id: number): { x: number; y: number } | null;
  /** Milliseconds each drawn frame took to draw (the newest last; the oldest dropped past 5000). */
  frameTimes: number[];
  /** Milliseconds between consecutive frames while the view is animating (held keys). */
  frameIntervals: number[];
  setView(start_ps: number, end_ps: number): void;
  /** The collapsed sections' names. */
  collapsed(): string[];
  /** The time the axis counts from, ps from the profile start (the paired view's step start; else 0). */
  axisOrigin(): number;
  /**
   * The critical path overlay: its step, its segments, those placed on a track and those
   * drawn by the last frame; null while the toggle is off.
   */
  criticalPath(): { step: number; segments: number; placed: number; drawn: number } | null;
}

/** Installs `hooks` for `owner` (replacing any earlier viewer's of that name). */
export function installHooks(owner: object, hooks: TraceHooks, name?: string): void {
  chartRegistry();
  const installed = { owner, ...hooks };
  if (name === undefined) window.__stepscope.trace = installed;
  else window.__stepscope.traces = { ...window.__stepscope.traces, [name]: installed };
}

function ownedBy(hooks: unknown, owner: object): boolean {
  return (hooks as { owner?: unknown } | undefined)?.owner === owner;
}

/** Removes the hooks if they are still `owner`'s. */
export function removeHooks(owner: object, name?: string): void {
  const global = window.__stepscope;
  if (!global) return;
  if (name === undefined) {
    if (ownedBy(global.trace, owner)) delete global.trace;
  } else if (global.traces && ownedBy(global.traces[name], owner)) {
    delete global.traces[name];
  }
}
