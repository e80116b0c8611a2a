/**
 * Find by name (/api/trace/find): Enter or › steps to the next match after the one shown,
 * Shift+Enter or ‹ to the previous, wrapping around past the last (first); the view moves
 * to the match and selects it. "Only matches" draws only the events whose name holds the
 * search text, applied once typing settles.
 */

import type { Selection } from "../api";
import { Cancelled, errorText, findNext, type FindCursor, type Match } from "./api";
import type { EventBasics } from "./details";
import { showSearchStatus } from "./panels";
import type { ViewState } from "./view_state";

export const FILTER_DELAY_MS = 300;

/** Where to search from: after the match shown when it was found for the same text, else from the start (end). */
export function findCursor(shown: (Match & { text: string }) | null, text: string, before: boolean): { cursor: FindCursor; from: Match | null } {
  const from = shown && shown.text === text ? shown : null;
  return { cursor: from ? { after_id: from.id, before } : { before }, from };
}

/** The filter the timeline is drawn with: the search text while "Only matches" is ticked. */
export function filterFor(onlyMatches: boolean, text: string): string {
  return onlyMatches ? text.trim() : "";
}

export interface SearchHost {
  /** Brings a match on screen and selects it. */
  show(basics: EventBasics): void;
  /** The name filter changed (state.filter holds it). */
  filterChanged(): void;
}

export interface SearchElements {
  searchInput: HTMLInputElement;
  searchStatus: HTMLElement;
  filterBox: HTMLInputElement;
}

export class Search {
  private controller: AbortController | null = null;
  private filterTimer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;

  constructor(
    private readonly elements: SearchElements,
    private readonly selection: Selection,
    private readonly state: ViewState,
    private readonly host: SearchHost,
  ) {}

  /** The text changed: the match shown is forgotten; with "Only matches", the filter follows once typing settles. */
  edited(): void {
    this.state.match = null;
    showSearchStatus(this.elements.searchStatus, "", null);
    if (!this.elements.filterBox.checked) return;
    // Typing: filter once the text has settled (each new filter is a pass over the index).
    if (this.filterTimer) clearTimeout(this.filterTimer);
    this.filterTimer = setTimeout(() => {
      this.filterTimer = null;
      if (!this.closed) this.applyFilter();
    }, FILTER_DELAY_MS);
  }

  /** Draws only the events matching the search text while "Only matches" is ticked. */
  applyFilter(): void {
    if (this.state.setFilter(filterFor(this.elements.filterBox.checked, this.elements.searchInput.value))) this.host.filterChanged();
  }

  async find(before: boolean): Promise<void> {
    const { searchInput, searchStatus } = this.elements;
    const text = searchInput.value.trim();
    if (!text) {
      showSearchStatus(searchStatus, "", null);
      return;
    }
    this.controller?.abort();
    const controller = new AbortController();
    this.controller = controller;
    const { cursor, from } = findCursor(this.state.match, text, before);
    searchStatus.setAttribute("data-state", "searching");
    try {
      let found = await findNext(this.selection, text, cursor, controller.signal);
      // Past the last (first) match: wrap around.
      if (!found && from) found = await findNext(this.selection, text, { before }, controller.signal);
      if (this.controller !== controller) return;
      searchStatus.setAttribute("data-state", "done");
      if (!found) {
        this.state.match = null;
        showSearchStatus(searchStatus, "no matches", null, 0);
        return;
      }
      this.state.match = { ...found, text };
      showSearchStatus(searchStatus, `${found.ordinal + 1} of ${found.total}`, found);
      this.host.show({ id: found.id, name: found.name, start_ps: found.start_ps, duration_ps: found.duration_ps, track: found.track, depth: found.depth });
    } catch (error) {
      if (error instanceof Cancelled || this.controller !== controller) return;
      searchStatus.setAttribute("data-state", "error");
      showSearchStatus(searchStatus, `search failed: ${errorText(error)}`, null);
    }
  }

  close(): void {
    this.closed = true;
    this.controller?.abort();
    if (this.filterTimer) clearTimeout(this.filterTimer);
  }
}
