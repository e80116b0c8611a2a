/**
 * What the trace viewer shows, free of the DOM: the visible range and vertical scroll, the
 * canvas size, collapsed sections, the tool, the selection (event, dragged range, timing
 * measurement, flows), the pointer, the search match and the name filter, with the
 * transitions between them and what follows from them (hit tests, hover, the scene to
 * draw, the query the screen needs). Setters answer whether anything changed; the viewer
 * decides what to redraw or fetch.
 */

import type { Flow, Match, TracksInfo } from "./api";
import type { PathOverlay } from "./critical_overlay";
import type { EventBasics } from "./details";
import { LANE_HEIGHT, Layout } from "./layout";
import type { EventHit, Prepared, RunHit } from "./model";
import { AXIS_HEIGHT, GUTTER_WIDTH, plotWidth, timeAt, xOf, type AreaMark, type Scene } from "./render";
import { centreOn, clampView, covers, requestFor, wholeProfile, type QueryParams, type TimeRange } from "./timeline";

export type Tool = "select" | "timing";

export interface Pointer {
  x: number;
  y: number;
  inside: boolean;
}

/** What hovering at the pointer shows: the cursor, and the event or run under it with where its tooltip goes. */
export interface Hover {
  cursor: string;
  hit: EventHit | RunHit | null;
  left: number;
  top: number;
}

/** What the screen needs from the server: nothing new, no track to ask for, or a query. */
export type DataNeed = { kind: "covered" } | { kind: "nothing" } | { kind: "query"; params: QueryParams };

/** What a dragged range asks the summary endpoint for (`tracks` null: every track). */
export type SummaryAsk = { kind: "empty"; range: TimeRange } | { kind: "ask"; range: TimeRange; tracks: number[] | null };

export type TrackSet = Pick<TracksInfo, "span_ps" | "sections" | "tracks">;

const TOOLTIP_WIDTH = 260;
const TOOLTIP_HEIGHT = 44;

export class ViewState {
  readonly span: number;
  view: TimeRange;
  scrollTop = 0;
  width = 0;
  height = 0;
  dpr = 1;
  layout: Layout;
  readonly collapsed = new Set<string>();
  tool: Tool = "select";
  selected: EventBasics | null = null;
  flows: Flow[] = [];
  area: AreaMark | null = null;
  timing: TimeRange | null = null;
  /** The critical path overlay shown; null while the toggle is off. */
  path: PathOverlay | null = null;
  pointer: Pointer = { x: 0, y: 0, inside: false };
  /** The search match shown, with the text it was found for. */
  match: (Match & { text: string }) | null = null;
  /** The name filter the timeline is drawn with ("Only matches"); "" for every event. */
  filter = "";

  /** `collapsed`: sections to start collapsed (names the profile lacks are ignored). */
  constructor(
    private readonly info: TrackSet,
    view: TimeRange | null = null,
    collapsed: Iterable<string> = [],
  ) {
    this.span = Math.max(1, info.span_ps);
    for (const name of collapsed) if (info.sections.includes(name)) this.collapsed.add(name);
    this.layout = new Layout(info.sections, info.tracks, this.collapsed);
    this.view = view ?? wholeProfile(this.span);
  }

  // ---------------------------------------------------------------- geometry

  plotWidth(): number {
    return plotWidth(this.width);
  }

  plotHeight(): number {
    return Math.max(1, this.height - AXIS_HEIGHT);
  }

  /** Picoseconds per CSS pixel of `view` (the current one by default). */
  psPerPx(view: TimeRange = this.view): number {
    return (view.end_ps - view.start_ps) / this.plotWidth();
  }

  timeAt(x: number): number {
    return timeAt(x, this.view, this.width);
  }

  xOf(t_ps: number): number {
    return xOf(t_ps, this.view, this.width);
  }

  /** Where zooming holds still: the pointer over the plot, else the middle (0..1 across the view). */
  anchor(): number {
    const { x, inside } = this.pointer;
    if (!inside || x < GUTTER_WIDTH) return 0.5;
    return Math.min(1, Math.max(0, (x - GUTTER_WIDTH) / this.plotWidth()));
  }

  // ---------------------------------------------------------------- transitions

  /** Whether the canvas changed size. */
  resize(width: number, height: number, dpr: number): boolean {
    if (width === this.width && height === this.height && dpr === this.dpr) return false;
    this.width = width;
    this.height = height;
    this.dpr = dpr;
    this.clampScroll();
    return true;
  }

  /** Moves to `view` (clamped to the profile); whether it moved. */
  setView(view: TimeRange): boolean {
    const next = clampView(view, this.span);
    if (next.start_ps === this.view.start_ps && next.end_ps === this.view.end_ps) return false;
    this.view = next;
    return true;
  }

  wholeProfile(): TimeRange {
    return wholeProfile(this.span);
  }

  /** The current zoom centred on [start, start + duration), zoomed so it is at least `minPx` wide. */
  centredOn(start_ps: number, duration_ps: number, minPx?: number): TimeRange {
    return centreOn(this.view, start_ps, duration_ps, this.span, this.plotWidth(), minPx);
  }

  /** The view framing the selected event with a tenth of its length each side ("F"); null with nothing selected. */
  framing(): TimeRange | null {
    if (!this.selected) return null;
    const { start_ps, duration_ps } = this.selected;
    const margin = Math.max(duration_ps * 0.1, 1);
    return { start_ps: start_ps - margin, end_ps: start_ps + duration_ps + margin };
  }

  clampScroll(): void {
    const most = Math.max(0, this.layout.height - this.plotHeight());
    this.scrollTop = Math.min(most, Math.max(0, this.scrollTop));
  }

  scrollTo(top: number): void {
    this.scrollTop = top;
    this.clampScroll();
  }

  /** Whether the scroll moved. */
  scrollBy(dy: number): boolean {
    const before = this.scrollTop;
    this.scrollTo(this.scrollTop + dy);
    return this.scrollTop !== before;
  }

  toggleSection(name: string): void {
    if (this.collapsed.has(name)) this.collapsed.delete(name);
    else this.collapsed.add(name);
    this.layout = new Layout(this.info.sections, this.info.tracks, this.collapsed);
    this.clampScroll();
  }

  /** Scrolls so lane (track, depth) is on screen, expanding its section; whether anything changed. */
  reveal(track: number, depth: number): boolean {
    let changed = false;
    const section = this.layout.trackSection[track];
    if (section !== undefined && section >= 0) {
      const name = this.layout.sections[section] as string;
      if (this.collapsed.has(name)) {
        this.toggleSection(name);
        changed = true;
      }
    }
    const y = this.layout.laneY(track, depth);
    if (Number.isNaN(y)) return changed;
    const screen = this.plotHeight();
    if (y < this.scrollTop || y + LANE_HEIGHT > this.scrollTop + screen) {
      this.scrollTo(y - screen / 2);
      changed = true;
    }
    return changed;
  }

  /** Selects an event (null: nothing); selecting one drops a dragged range. Flows come with its details. */
  select(basics: EventBasics | null): void {
    this.selected = basics;
    this.flows = [];
    if (basics) this.area = null;
  }

  /** What Esc clears first: the timing measurement, then the dragged range, then the selected event. */
  nextToClear(): "timing" | "area" | "selection" | null {
    if (this.timing) return "timing";
    if (this.area) return "area";
    if (this.selected) return "selection";
    return null;
  }

  /** Whether the filter changed. */
  setFilter(filter: string): boolean {
    if (filter === this.filter) return false;
    this.filter = filter;
    return true;
  }

  // ---------------------------------------------------------------- what follows

  /** Tracks on screen (`margin` screens more above and below), ascending ids. */
  visibleTracks(margin: number): number[] {
    const screen = this.plotHeight();
    return this.layout.tracksBetween(this.scrollTop - margin * screen, this.scrollTop + (1 + margin) * screen);
  }

  /**
   * Whether `latest` (the newest request) still covers the screen; if not, the query for
   * the view plus overscan, the visible tracks and a screen above and below.
   */
  dataNeed(latest: QueryParams | null): DataNeed {
    const visible = this.visibleTracks(0);
    const plot = this.plotWidth();
    if (latest && covers(latest, this.view, plot, this.span, visible, this.filter)) return { kind: "covered" };
    const tracks = this.visibleTracks(1);
    // Nothing expanded near the screen (an empty `tracks=` would mean every track).
    if (tracks.length === 0) return { kind: "nothing" };
    return { kind: "query", params: requestFor(this.view, plot, this.span, tracks, this.layout.isEverything(tracks), this.filter) };
  }

  /** The event or merged run at canvas point (x, y) in the answer drawn. */
  hitAt(x: number, y: number, prepared: Prepared | null): EventHit | RunHit | null {
    if (!prepared || x < GUTTER_WIDTH || y < AXIS_HEIGHT) return null;
    const hit = this.layout.hit(y - AXIS_HEIGHT + this.scrollTop);
    if (hit?.kind !== "lane") return null;
    return prepared.hit(hit.track, hit.depth, this.timeAt(x), this.psPerPx() * 1.5);
  }

  /** The cursor and tooltip at the pointer (no hit while dragging or outside). */
  hover(prepared: Prepared | null, dragging: boolean): Hover {
    const { x, y, inside } = this.pointer;
    const hit = inside && !dragging ? this.hitAt(x, y, prepared) : null;
    let cursor = "default";
    if (y < AXIS_HEIGHT && x >= GUTTER_WIDTH) cursor = "grab";
    else if (hit) cursor = "pointer";
    else if (y >= AXIS_HEIGHT && this.layout.hit(y - AXIS_HEIGHT + this.scrollTop)?.kind === "section") cursor = "pointer";
    else if (this.tool === "timing" && x >= GUTTER_WIDTH) cursor = "col-resize";
    const left = Math.max(0, Math.min(x + 14, this.width - TOOLTIP_WIDTH));
    const top = Math.max(0, y + 18 + TOOLTIP_HEIGHT > this.height ? y - TOOLTIP_HEIGHT : y + 18);
    return { cursor, hit, left, top };
  }

  /** The middle of event `id` on the canvas, when it is drawn and on screen. */
  eventAt(id: number, prepared: Prepared | null): { x: number; y: number } | null {
    if (!prepared) return null;
    const row = prepared.rowOf(id);
    if (row < 0) return null;
    const hit = prepared.eventHit(row);
    const laneY = this.layout.laneY(hit.track, hit.depth);
    if (Number.isNaN(laneY)) return null;
    const y = AXIS_HEIGHT + laneY - this.scrollTop + LANE_HEIGHT / 2;
    if (y < AXIS_HEIGHT || y > this.height) return null;
    const right = GUTTER_WIDTH + this.plotWidth();
    const x0 = Math.max(GUTTER_WIDTH, this.xOf(hit.start_ps));
    const x1 = Math.min(right, this.xOf(hit.start_ps + hit.duration_ps));
    if (x1 < GUTTER_WIDTH || x0 > right) return null;
    return { x: (x0 + Math.max(x0, x1)) / 2, y };
  }

  /** What "Export this range" exports: the dragged range when there is one (its whole
   * picoseconds), else the view. */
  exportRange(): TimeRange {
    const area = this.area;
    if (!area) return this.view;
    return { start_ps: Math.max(0, Math.floor(area.start_ps)), end_ps: Math.max(1, Math.ceil(area.end_ps)) };
  }

  /** What a dragged range summarizes: its whole picoseconds over the tracks it covers. */
  summaryAsk(area: AreaMark): SummaryAsk {
    const tracks = this.layout.tracksBetween(area.top, area.bottom);
    if (tracks.length === 0) return { kind: "empty", range: { start_ps: area.start_ps, end_ps: area.end_ps } };
    const range = { start_ps: Math.max(0, Math.floor(area.start_ps)), end_ps: Math.max(1, Math.ceil(area.end_ps)) };
    return { kind: "ask", range, tracks: this.layout.isEverything(tracks) ? null : tracks };
  }

  trackName = (track: number): string => {
    const info = this.info.tracks[track];
    return info ? `${info.section} › ${info.name}` : `track ${track}`;
  };

  scene(prepared: Prepared | null): Scene {
    return {
      width: this.width,
      height: this.height,
      dpr: this.dpr,
      view: this.view,
      scrollTop: this.scrollTop,
      layout: this.layout,
      prepared,
      selectedId: this.selected?.id ?? null,
      area: this.area,
      timing: this.timing,
      flows: this.flows,
      path: this.path,
    };
  }
}

