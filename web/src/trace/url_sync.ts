/**
 * The trace viewer's address: `start_ps`/`end_ps` give the view a page opens on, and follow
 * the view through history.replaceState (at most every URL_DELAY_MS, never a new history
 * entry) while the address still names the viewer's run and tool.
 */

import type { Selection } from "../api";
import { rangeFromSearch, wholeProfile, type TimeRange } from "./timeline";

export const URL_DELAY_MS = 250;

/** The view an address asks for, else the whole profile. */
export function viewFromAddress(search: string, span_ps: number): TimeRange {
  return rangeFromSearch(search, span_ps) ?? wholeProfile(span_ps);
}

/**
 * The address (path and query) showing `view`; null when the address no longer belongs to
 * `selection` (the shell moved to another run or tool meanwhile).
 */
export function addressFor(pathname: string, search: string, selection: Pick<Selection, "run" | "tool">, view: TimeRange): string | null {
  const params = new URLSearchParams(search);
  if (params.get("tool") !== selection.tool || params.get("run") !== selection.run) return null;
  params.set("start_ps", String(Math.round(view.start_ps)));
  params.set("end_ps", String(Math.round(view.end_ps)));
  return `${pathname}?${params.toString()}`;
}

export interface UrlSyncOptions {
  selection: Pick<Selection, "run" | "tool">;
  view(): TimeRange;
  /** After the address follows the view (not when it belongs to another selection). */
  synced(): void;
  delayMs?: number;
}

export class UrlSync {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;

  constructor(private readonly options: UrlSyncOptions) {}

  /** The view moved: the address follows within the delay (one update per delay). */
  schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      if (!this.closed) this.sync();
    }, this.options.delayMs ?? URL_DELAY_MS);
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private sync(): void {
    const next = addressFor(location.pathname, location.search, this.options.selection, this.options.view());
    if (next === null) return;
    if (next !== `${location.pathname}${location.search}`) history.replaceState(history.state, "", next);
    this.options.synced();
  }
}
