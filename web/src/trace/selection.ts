/**
 * What the details pane shows for the selection: a selected event (its basics at once, its
 * args and flows from /api/trace/event), a merged run, or the aggregates of a dragged range
 * (/api/trace/summary). One request at a time: a newer selection aborts the older one's and
 * drops its answer.
 */

import type { Selection } from "../api";
import { Cancelled, errorText, getEvent, getSummary, type EventAnswer, type FlowEnd } from "./api";
import { showEmpty, showEvent, showRun, showSummary, type EventBasics } from "./details";
import type { EventHit, RunHit } from "./model";
import type { AreaMark } from "./render";
import type { ViewState } from "./view_state";

export interface SelectionHost {
  /** The marks on the canvas changed. */
  redraw(): void;
  /** Brings an event on screen and selects it (a flow's other end). */
  show(basics: EventBasics): void;
  /** Zooms to a merged run. */
  zoomToRun(run: RunHit): void;
}

/** The event a flow end names, when the server could place it on a track. */
export function flowTarget(end: FlowEnd): EventBasics | null {
  if (end.id === undefined || end.track === undefined) return null;
  return { id: end.id, name: end.name, start_ps: end.start_ps, duration_ps: end.duration_ps, track: end.track, depth: end.depth ?? 0 };
}

export class SelectionDetails {
  private controller: AbortController | null = null;

  constructor(
    private readonly pane: HTMLElement,
    private readonly selection: Selection,
    private readonly state: ViewState,
    private readonly host: SelectionHost,
  ) {}

  /** Selects an event (null: nothing) and describes it. */
  select(basics: EventBasics | null): void {
    this.controller?.abort();
    this.controller = null;
    this.state.select(basics);
    this.host.redraw();
    if (!basics) {
      showEmpty(this.pane);
      return;
    }
    const controller = new AbortController();
    this.controller = controller;
    const names = this.state.trackName;
    const jump = (end: FlowEnd): void => {
      const target = flowTarget(end);
      if (target) this.host.show(target);
    };
    showEvent(this.pane, basics, names, null, jump);
    getEvent(this.selection, basics.id, controller.signal).then(
      (answer: EventAnswer) => {
        if (this.controller !== controller) return;
        this.state.flows = answer.flows;
        showEvent(this.pane, basics, names, answer, jump);
        this.host.redraw();
      },
      (error: unknown) => {
        if (this.controller !== controller || error instanceof Cancelled) return;
        showEvent(this.pane, basics, names, null, jump, `could not read the event's details: ${errorText(error)}`);
      },
    );
  }

  /** A click on the timeline: the event under it, a merged run, or nothing. */
  pick(hit: EventHit | RunHit | null): void {
    if (!hit) this.select(null);
    else if (hit.kind === "event") this.select({ id: hit.id, name: hit.name, start_ps: hit.start_ps, duration_ps: hit.duration_ps, track: hit.track, depth: hit.depth });
    else this.showRun(hit);
  }

  /** A merged run: no event selected, the run described with a button to zoom to it. */
  showRun(run: RunHit): void {
    this.select(null);
    showRun(this.pane, run, this.state.trackName, () => this.host.zoomToRun(run));
  }

  /** Drops the dragged range (the pane goes back to its hint). */
  clearArea(): void {
    this.state.area = null;
    showEmpty(this.pane);
  }

  /** A dragged range: its aggregates over the tracks it covers. */
  summarize(area: AreaMark): void {
    this.select(null);
    this.state.area = area;
    const ask = this.state.summaryAsk(area);
    if (ask.kind === "empty") {
      showSummary(this.pane, ask.range, { start_ps: ask.range.start_ps, end_ps: ask.range.end_ps, events: 0, names: [] });
      this.host.redraw();
      return;
    }
    const { range, tracks } = ask;
    const controller = new AbortController();
    this.controller = controller;
    showSummary(this.pane, range, null);
    getSummary(this.selection, range.start_ps, range.end_ps, tracks, controller.signal).then(
      (summary) => {
        if (this.controller === controller) showSummary(this.pane, range, summary);
      },
      (error: unknown) => {
        if (this.controller === controller && !(error instanceof Cancelled)) showSummary(this.pane, range, null, errorText(error));
      },
    );
    this.host.redraw();
  }

  close(): void {
    this.controller?.abort();
  }
}
