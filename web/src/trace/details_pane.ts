/**
 * Whether the trace viewer's details pane is open. Closed, the timeline has the pane's
 * room too (at 1280x800 a pane always reserved left ~430 px of timeline); it opens when it
 * has something to show (an event, a merged run, a range's aggregates, the keys from the
 * "?" in the timeline's corner) and closes when that is cleared (Esc, its close button). The pane's
 * `data-kind` (details.ts) is the one truth: every writer of the pane goes through it, so
 * this follows it rather than each caller opening and closing. `.tv-root[data-details]`
 * says "open" or "closed"; closed, the splitter and the pane are not displayed, so Tab
 * does not stop on them.
 */

import type { Kind } from "./details";

export type PaneState = "open" | "closed";

const NOTHING: Kind = "empty";

/** The pane is open while it shows something. */
export function paneState(kind: string | null): PaneState {
  return kind === null || kind === NOTHING ? "closed" : "open";
}

export class DetailsPane {
  private readonly observer: MutationObserver;

  constructor(
    private readonly root: HTMLElement,
    private readonly pane: HTMLElement,
    private readonly keysButton: HTMLElement,
    /** Called when the pane opens (its height is fitted to the room then). */
    private readonly opened: () => void,
  ) {
    this.observer = new MutationObserver(() => this.sync());
    this.observer.observe(pane, { attributes: true, attributeFilter: ["data-kind"] });
    this.sync();
  }

  get kind(): Kind {
    return (this.pane.getAttribute("data-kind") ?? "empty") as Kind;
  }

  get open(): boolean {
    return paneState(this.kind) === "open";
  }

  /** Applies the pane's kind now (the observer applies it at the end of the task too). */
  sync(): void {
    const state = paneState(this.kind);
    this.keysButton.setAttribute("aria-expanded", String(this.kind === "keys"));
    if (this.root.getAttribute("data-details") === state) return;
    this.root.setAttribute("data-details", state);
    if (state === "open") this.opened();
  }

  close(): void {
    this.observer.disconnect();
  }
}
