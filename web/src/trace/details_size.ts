/**
 * The height of the trace viewer's details pane, which the splitter above it sets: bounds,
 * keyboard steps and the height remembered in localStorage. A fixed pane cut off long args,
 * flow lists and range summaries; a tall one leaves the timeline no room, so the timeline
 * keeps at least TIMELINE_MIN_PX. One height for every run: it is how the person likes the
 * screen, like a window size, not something about a profile.
 */

export const DETAILS_DEFAULT_PX = 190;
export const DETAILS_MIN_PX = 80;
/** What the timeline keeps however tall the pane is dragged (its wrap's min-height). */
export const TIMELINE_MIN_PX = 200;
export const KEY_STEP_PX = 16;
export const PAGE_STEP_PX = 96;
export const STORAGE_KEY = "stepscope.trace.detailsHeight";

export interface Bounds {
  min: number;
  max: number;
}

/** The pane's bounds when it and the timeline share `room` px: the timeline keeps its
 * minimum; on a screen too short for both, the pane keeps its own. */
export function detailsBounds(room: number): Bounds {
  return { min: DETAILS_MIN_PX, max: Math.max(DETAILS_MIN_PX, Math.floor(room - TIMELINE_MIN_PX)) };
}

export function clampHeight(height: number, bounds: Bounds): number {
  if (!Number.isFinite(height)) return bounds.min;
  return Math.round(Math.min(bounds.max, Math.max(bounds.min, height)));
}

/**
 * The height a key asks for, or null for a key the splitter does not handle. The splitter
 * lies across the page above the pane: ArrowUp moves it up (the pane grows), ArrowDown down;
 * PageUp / PageDown move it further; Home gives the timeline its least room (the pane its
 * most), End the pane its least.
 */
export function keyHeight(key: string, height: number, bounds: Bounds): number | null {
  const wanted = KEY_MOVES[key]?.(height, bounds);
  return wanted === undefined ? null : clampHeight(wanted, bounds);
}

const KEY_MOVES: Record<string, (height: number, bounds: Bounds) => number> = {
  ArrowUp: (height) => height + KEY_STEP_PX,
  ArrowDown: (height) => height - KEY_STEP_PX,
  PageUp: (height) => height + PAGE_STEP_PX,
  PageDown: (height) => height - PAGE_STEP_PX,
  Home: (_, bounds) => bounds.max,
  End: (_, bounds) => bounds.min,
};

/** The height stored; null for nothing stored or anything that is not a positive number of px. */
export function parseHeight(text: string | null): number | null {
  if (text === null || !/^\d+(\.\d+)?$/.test(text.trim())) return null;
  const value = Number(text);
  return value > 0 ? value : null;
}

type Store = Pick<Storage, "getItem" | "setItem">;

function browserStore(): Store | null {
  try {
    return window.localStorage;
  } catch {
    return null; // storage disabled (a private window's policy)
  }
}

/** The remembered height, else the default (the caller clamps it to the room there is). */
export function loadDetailsHeight(store: Store | null = browserStore()): number {
  try {
    return parseHeight(store?.getItem(STORAGE_KEY) ?? null) ?? DETAILS_DEFAULT_PX;
  } catch {
    return DETAILS_DEFAULT_PX;
  }
}

export function saveDetailsHeight(height: number, store: Store | null = browserStore()): void {
  try {
    store?.setItem(STORAGE_KEY, String(Math.round(height)));
  } catch {
    // storage full or disabled: the pane keeps its height on this page
  }
}
