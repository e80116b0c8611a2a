/**
 * The trace viewer's test and benchmark hooks, `window.__stepscope.trace` while a viewer is
 * shown (the browser tests and bench/trace_viewer_page.py read them).
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
}

/** Installs `hooks` for `owner` (replacing any earlier viewer's). */
export function installHooks(owner: object, hooks: TraceHooks): void {
  chartRegistry();
  window.__stepscope.trace = { owner, ...hooks };
}

/** Removes the hooks if they are still `owner`'s. */
export function removeHooks(owner: object): void {
  const hooks = window.__stepscope;
  if (hooks && (hooks.trace as { owner?: unknown } | undefined)?.owner === owner) delete hooks.trace;
}
