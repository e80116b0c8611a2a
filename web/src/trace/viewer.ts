/**
 * The trace viewer page: a canvas timeline over the server's index (docs/dashboard.md,
 * "Trace viewer API"), navigated like Perfetto and chrome://tracing.
 *
 * - Frames: requestAnimationFrame only, drawn from the last query answer scaled to the
 *   current view (render.ts); held W/A/S/D animate from frame to frame.
 * - Data: after a frame whose view, scroll or size changed, the viewer checks whether the
 *   newest request still covers the view (range with a margin, pixel density, visible
 *   tracks); if not it asks the RequestScheduler for the view plus half a view each side,
 *   at screen density, for the visible tracks plus a screen above and below. The scheduler
 *   sends once the view has been still for 50 ms (or every 250 ms while it keeps moving),
 *   one request at a time, newest wins.
 * - Tools: select (click an event: details and flow arrows; drag: aggregates of the range
 *   and tracks dragged over) and timing (drag to measure; Esc clears).
 * - Address: `start_ps`/`end_ps` follow the view through history.replaceState.
 */

import type { Selection } from "../api";
import type { MountContext } from "../pages/types";
import { chartRegistry } from "../components/charts";
import { el } from "../dom";
import { groupThousands } from "../format";
import {
  ApiError,
  Cancelled,
  exportUrl,
  findNext,
  getEvent,
  getQuery,
  getSummary,
  getTracks,
  type EventAnswer,
  type Flow,
  type FlowEnd,
  type Match,
  type TracksInfo,
} from "./api";
import type { TraceAnswer } from "./decode";
import { showEmpty, showEvent, showRun, showSummary, type EventBasics } from "./details";
import { LANE_HEIGHT, Layout } from "./layout";
import { Prepared, type EventHit, type RunHit } from "./model";
import { AXIS_HEIGHT, GUTTER_WIDTH, plotWidth, Renderer, timeAt, xOf, type AreaMark } from "./render";
import { RequestScheduler } from "./scheduler";
import {
  centreOn,
  clampView,
  covers,
  formatDuration,
  panBy,
  rangeFromSearch,
  requestFor,
  sameParams,
  wholeProfile,
  zoomAt,
  type QueryParams,
  type TimeRange,
} from "./timeline";

/** The test and benchmark hooks (window.__stepscope.trace). */
export interface TraceHooks {
  view(): TimeRange;
  drawn(): { events: number; runs: number; lanes: number; requests: number };
  eventAt(id: number): { x: number; y: number } | null;
  /** Milliseconds each drawn frame took to draw (the newest last; the oldest dropped past 5000). */
  frameTimes: number[];
  /** Milliseconds between consecutive frames while the view is animating (held keys). */
  frameIntervals: number[];
  setView(start_ps: number, end_ps: number): void;
}

type Tool = "select" | "timing";

type Drag =
  | { kind: "pan"; x0: number; y0: number; view0: TimeRange; scroll0: number; vertical: boolean; moved: boolean }
  | { kind: "select"; x0: number; y0: number; moved: boolean }
  | { kind: "timing"; t0: number; moved: boolean }
  | { kind: "section"; section: number; name: string; moved: boolean; x0: number; y0: number };

const ZOOM_RATE = 2.2; // e-folds of the view's length per second while W/S are held
const PAN_RATE = 0.9; // view widths per second while A/D are held
const ACCELERATION_S = 0.6; // holding longer speeds up, to 2.5x after this long
const MIN_HOLD_MS = 140; // a tap moves as much as a hold this long
const DRAG_SLOP_PX = 3;
const URL_DELAY_MS = 250;
const MAX_FRAME_SAMPLES = 5000;

const MOTION_KEYS = new Set(["w", "a", "s", "d"]);

function message(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  return error instanceof Error ? error.message : String(error);
}

function isTyping(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  const tag = target.tagName;
  return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable;
}

export async function mountTraceViewer(root: HTMLElement, context: MountContext): Promise<void> {
  let info: TracksInfo;
  try {
    info = await getTracks(context.selection, context.signal, context.onPending);
  } catch (error) {
    if (error instanceof Cancelled || context.signal.aborted) return;
    context.fail(message(error));
    return;
  }
  if (context.signal.aborted) return;
  const viewer = new TraceViewer(root, context, info);
  context.signal.addEventListener("abort", () => viewer.destroy(), { once: true });
}

export class TraceViewer {
  private readonly selection: Selection;
  private readonly info: TracksInfo;
  private readonly span: number;
  private readonly rootEl: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly wrap: HTMLElement;
  private readonly tooltip: HTMLElement;
  private readonly details: HTMLElement;
  private readonly status: HTMLElement;
  private readonly searchInput: HTMLInputElement;
  private readonly searchStatus: HTMLElement;
  private readonly measureOut: HTMLElement;
  private readonly filterBox: HTMLInputElement;
  private readonly exportLink: HTMLAnchorElement;
  private readonly toolButtons: Record<Tool, HTMLButtonElement>;
  private readonly renderer: Renderer;
  private readonly scheduler: RequestScheduler<QueryParams, TraceAnswer>;
  private readonly resizeObserver: ResizeObserver;
  private readonly cleanups: (() => void)[] = [];

  private layout: Layout;
  private readonly collapsed = new Set<string>();
  private view: TimeRange;
  private scrollTop = 0;
  private width = 0;
  private height = 0;
  private dpr = 1;
  private prepared: Prepared | null = null;
  private tool: Tool = "select";
  private selected: EventBasics | null = null;
  private flows: Flow[] = [];
  private area: AreaMark | null = null;
  private timing: TimeRange | null = null;
  private drag: Drag | null = null;
  private mouse = { x: 0, y: 0, inside: false };
  private readonly held = new Map<string, { since: number; until: number }>();

  private raf = 0;
  private lastFrame = 0;
  private dataDirty = true;
  private hoverDirty = false;
  private urlTimer: ReturnType<typeof setTimeout> | null = null;
  private isReady = false;
  /** The last wantData found no track to ask for (all collapsed, an empty profile). */
  private nothingToAsk = false;
  private destroyed = false;
  private lastDrawnEvents = -1;
  private cursor = "";
  private tooltipKey = "";
  private tooltipX = -1;
  private tooltipY = -1;
  private detailsController: AbortController | null = null;
  private findController: AbortController | null = null;
  private match: (Match & { text: string }) | null = null;
  /** The name filter the timeline is drawn with ("Only matches"); "" for every event. */
  private filter = "";
  private filterTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly frameTimes: number[] = [];
  private readonly frameIntervals: number[] = [];

  constructor(
    root: HTMLElement,
    private readonly context: MountContext,
    info: TracksInfo,
  ) {
    this.selection = context.selection;
    this.info = info;
    this.span = Math.max(1, info.span_ps);
    this.layout = new Layout(info.sections, info.tracks, this.collapsed);
    this.view = rangeFromSearch(location.search, this.span) ?? wholeProfile(this.span);

    this.canvas = el("canvas", { id: "trace-canvas", tabindex: 0, "aria-label": "Trace timeline", "data-drawn-events": 0 });
    this.tooltip = el("div", { id: "tv-tooltip", class: "tv-tooltip", hidden: true });
    this.wrap = el("div", { class: "tv-canvas-wrap" }, [this.canvas, this.tooltip]);
    this.details = el("section", { id: "tv-details", class: "tv-details", "aria-label": "Details", "data-kind": "empty" });
    this.status = el("span", { id: "tv-status", class: "tv-status", "aria-live": "polite" });
    this.searchInput = el("input", { id: "tv-search", type: "search", placeholder: "Find events by name", "aria-label": "Find events by name", autocomplete: "off" });
    this.searchStatus = el("span", { id: "tv-search-status", class: "tv-search-status", "aria-live": "polite" });
    this.measureOut = el("span", { id: "tv-measure", class: "tv-measure", hidden: true });
    this.filterBox = el("input", { type: "checkbox", id: "tv-filter" });
    this.exportLink = el("a", { id: "tv-export", class: "button-link", download: "", title: "Download the visible range as Chrome trace JSON (opens in Perfetto)" }, "Export this range");
    this.toolButtons = {
      select: el("button", { type: "button", id: "tv-select", "aria-pressed": "true", title: "Select (1): click an event, drag a range" }, "Select"),
      timing: el("button", { type: "button", id: "tv-timing", "aria-pressed": "false", title: "Timing (2): drag to measure" }, "Timing"),
    };
    const toolbar = el("div", { class: "tv-toolbar", role: "toolbar", "aria-label": "Trace viewer tools" }, [
      el("div", { class: "tv-group", role: "group", "aria-label": "Tool" }, [this.toolButtons.select, this.toolButtons.timing]),
      el("button", { type: "button", id: "tv-reset", title: "Show the whole profile (0)", onclick: () => this.resetZoom() }, "Reset zoom"),
      this.measureOut,
      el("div", { class: "tv-search" }, [
        this.searchInput,
        el("button", { type: "button", id: "tv-prev", title: "Previous match (Shift+Enter)", "aria-label": "Previous match", onclick: () => void this.find(true) }, "‹"),
        el("button", { type: "button", id: "tv-next", title: "Next match (Enter)", "aria-label": "Next match", onclick: () => void this.find(false) }, "›"),
        this.searchStatus,
        el("label", { class: "tv-filter", title: "Draw only the events whose name contains the search text" }, [this.filterBox, "Only matches"]),
      ]),
      this.status,
      this.exportLink,
    ]);
    this.rootEl = el("div", { class: "tv-root", "data-events": info.event_count }, [toolbar, this.wrap, this.details]);
    root.replaceChildren(this.rootEl);
    showEmpty(this.details);

    const ctx = this.canvas.getContext("2d", { alpha: false });
    if (!ctx) throw new Error("this browser has no 2D canvas");
    this.renderer = new Renderer(ctx);
    this.scheduler = new RequestScheduler<QueryParams, TraceAnswer>({
      fetch: (params, signal) => getQuery(this.selection, params, signal),
      onAnswer: (answer, params) => this.onAnswer(answer, params),
      onError: (error) => this.onQueryError(error),
      same: sameParams,
    });

    this.toolButtons.select.addEventListener("click", () => this.setTool("select"));
    this.toolButtons.timing.addEventListener("click", () => this.setTool("timing"));
    this.searchInput.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        void this.find(event.shiftKey);
      } else if (event.key === "Escape") {
        this.searchInput.blur();
        this.canvas.focus({ preventScroll: true });
      }
    });
    this.searchInput.addEventListener("input", () => {
      this.match = null;
      this.setSearchStatus("", null);
      if (!this.filterBox.checked) return;
      // Typing: filter once the text has settled (each new filter is a pass over the index).
      if (this.filterTimer) clearTimeout(this.filterTimer);
      this.filterTimer = setTimeout(() => {
        this.filterTimer = null;
        if (!this.destroyed) this.applyFilter();
      }, 300);
    });
    this.filterBox.addEventListener("change", () => this.applyFilter());
    this.exportLink.addEventListener("pointerdown", () => this.updateExport());
    this.exportLink.addEventListener("focus", () => this.updateExport());

    this.listen(this.canvas, "pointerdown", (event) => this.onPointerDown(event as PointerEvent));
    this.listen(this.canvas, "pointermove", (event) => this.onPointerMove(event as PointerEvent));
    this.listen(this.canvas, "pointerup", (event) => this.onPointerUp(event as PointerEvent));
    this.listen(this.canvas, "pointercancel", () => {
      this.drag = null;
    });
    this.listen(this.canvas, "pointerleave", () => {
      this.mouse.inside = false;
      this.hideTooltip();
    });
    this.listen(this.canvas, "wheel", (event) => this.onWheel(event as WheelEvent), { passive: false });
    this.listen(this.canvas, "contextmenu", (event) => {
      if (this.drag) event.preventDefault();
    });
    this.listen(window, "keydown", (event) => this.onKeyDown(event as KeyboardEvent));
    this.listen(window, "keyup", (event) => this.onKeyUp(event as KeyboardEvent));
    this.listen(window, "blur", () => this.held.clear());
    this.listen(window, "resize", () => this.fitHeight());

    this.resizeObserver = new ResizeObserver(() => this.measure());
    this.resizeObserver.observe(this.wrap);
    this.fitHeight();
    this.measure();
    this.installHooks();
    this.updateExport();
    this.canvas.focus({ preventScroll: true });
    // The first request goes at once: nothing is on screen yet.
    this.wantData(true);
    this.requestFrame();
  }

  // ------------------------------------------------------------------ lifecycle

  private listen(target: EventTarget, type: string, handler: (event: Event) => void, options?: AddEventListenerOptions): void {
    target.addEventListener(type, handler, options);
    this.cleanups.push(() => target.removeEventListener(type, handler, options));
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.scheduler.close();
    this.detailsController?.abort();
    this.findController?.abort();
    if (this.raf) cancelAnimationFrame(this.raf);
    if (this.urlTimer) clearTimeout(this.urlTimer);
    if (this.filterTimer) clearTimeout(this.filterTimer);
    this.resizeObserver.disconnect();
    for (const cleanup of this.cleanups) cleanup();
    const hooks = window.__stepscope;
    if (hooks && (hooks.trace as { owner?: unknown } | undefined)?.owner === this) delete hooks.trace;
  }

  private installHooks(): void {
    const hooks: TraceHooks & { owner: TraceViewer } = {
      owner: this,
      view: () => ({ start_ps: Math.round(this.view.start_ps), end_ps: Math.round(this.view.end_ps) }),
      drawn: () => ({
        events: this.renderer.stats.events,
        runs: this.renderer.stats.runs,
        lanes: this.renderer.stats.lanes,
        requests: this.scheduler.requests,
      }),
      eventAt: (id) => this.eventAt(id),
      frameTimes: this.frameTimes,
      frameIntervals: this.frameIntervals,
      setView: (start_ps, end_ps) => this.setView({ start_ps, end_ps }),
    };
    chartRegistry();
    window.__stepscope.trace = hooks;
  }

  /** The page fills the window below the header; the canvas takes what the bars leave. */
  private fitHeight(): void {
    const top = this.rootEl.getBoundingClientRect().top + window.scrollY;
    this.rootEl.style.height = `${Math.max(360, window.innerHeight - top - 12)}px`;
  }

  private measure(): void {
    const width = Math.max(1, this.wrap.clientWidth);
    const height = Math.max(1, this.wrap.clientHeight);
    const dpr = window.devicePixelRatio || 1;
    if (width === this.width && height === this.height && dpr === this.dpr) return;
    this.width = width;
    this.height = height;
    this.dpr = dpr;
    this.canvas.width = Math.round(width * dpr);
    this.canvas.height = Math.round(height * dpr);
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${height}px`;
    this.clampScroll();
    this.dataDirty = true;
    // Drawn now, not on the next frame: a resized canvas is blank until drawn.
    this.draw();
  }

  // ------------------------------------------------------------------ frames

  private requestFrame(): void {
    if (!this.raf && !this.destroyed) this.raf = requestAnimationFrame((now) => this.onFrame(now));
  }

  private onFrame(now: number): void {
    this.raf = 0;
    if (this.destroyed) return;
    const animating = this.animate(now);
    this.draw();
    if (animating) this.requestFrame();
  }

  /** Applies held keys for the time since the last frame; whether to keep animating. */
  private animate(now: number): boolean {
    if (this.held.size === 0) {
      this.lastFrame = 0;
      return false;
    }
    const dt = this.lastFrame ? Math.min(0.05, (now - this.lastFrame) / 1000) : 1 / 60;
    if (this.lastFrame) {
      this.frameIntervals.push(now - this.lastFrame);
      if (this.frameIntervals.length > MAX_FRAME_SAMPLES) this.frameIntervals.splice(0, this.frameIntervals.length - MAX_FRAME_SAMPLES);
    }
    this.lastFrame = now;
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
    let view = this.view;
    if (zoom !== 0) view = zoomAt(view, Math.exp(zoom * ZOOM_RATE * dt), this.anchor(), this.span);
    if (pan !== 0) view = panBy(view, pan * PAN_RATE * dt * (view.end_ps - view.start_ps), this.span);
    this.setView(view);
    return this.held.size > 0;
  }

  /** Where zooming holds still: the mouse over the plot, else the middle. */
  private anchor(): number {
    if (!this.mouse.inside || this.mouse.x < GUTTER_WIDTH) return 0.5;
    return Math.min(1, Math.max(0, (this.mouse.x - GUTTER_WIDTH) / plotWidth(this.width)));
  }

  private draw(): void {
    if (this.destroyed || this.width <= 1) return;
    const started = performance.now();
    this.renderer.draw({
      width: this.width,
      height: this.height,
      dpr: this.dpr,
      view: this.view,
      scrollTop: this.scrollTop,
      layout: this.layout,
      prepared: this.prepared,
      selectedId: this.selected?.id ?? null,
      area: this.area,
      timing: this.timing,
      flows: this.flows,
    });
    this.frameTimes.push(performance.now() - started);
    if (this.frameTimes.length > MAX_FRAME_SAMPLES) this.frameTimes.splice(0, this.frameTimes.length - MAX_FRAME_SAMPLES);
    const drawn = this.renderer.stats.events;
    if (drawn !== this.lastDrawnEvents) {
      this.canvas.setAttribute("data-drawn-events", String(drawn));
      this.lastDrawnEvents = drawn;
    }
    // What is under a still mouse changes when the view moves under it.
    if (this.hoverDirty || (this.mouse.inside && this.tooltipKey)) {
      this.hoverDirty = false;
      this.updateHover();
    }
    if (this.dataDirty) {
      this.dataDirty = false;
      this.wantData(false);
    }
    if (!this.isReady && (this.prepared || this.nothingToAsk)) {
      this.isReady = true;
      this.context.ready();
      // The shell's "Loading…" line above is gone: take the room it leaves.
      this.fitHeight();
    }
  }

  // ------------------------------------------------------------------ data

  private plotHeight(): number {
    return Math.max(1, this.height - AXIS_HEIGHT);
  }

  /** Tracks on screen (`margin` screens more above and below), ascending ids. */
  private visibleTracks(margin: number): number[] {
    const screen = this.plotHeight();
    return this.layout.tracksBetween(this.scrollTop - margin * screen, this.scrollTop + (1 + margin) * screen);
  }

  private wantData(now: boolean): void {
    if (this.width <= 1) return;
    const visible = this.visibleTracks(0);
    const plot = plotWidth(this.width);
    const latest = this.scheduler.latest;
    if (latest && covers(latest, this.view, plot, this.span, visible, this.filter)) return;
    const tracks = this.visibleTracks(1);
    if (tracks.length === 0) {
      // Nothing expanded near the screen (an empty `tracks=` would mean every track).
      this.nothingToAsk = true;
      return;
    }
    this.nothingToAsk = false;
    this.scheduler.want(requestFor(this.view, plot, this.span, tracks, this.layout.isEverything(tracks), this.filter), now);
  }

  private onAnswer(answer: TraceAnswer, params: QueryParams): void {
    this.prepared = new Prepared(answer, params);
    const { events, runs } = answer.header.counts;
    this.setStatus(`${groupThousands(String(events))} events, ${groupThousands(String(runs))} runs · ${(answer.bytes / 1024).toFixed(0)} KiB`, "ok");
    this.dataDirty = true;
    this.requestFrame();
  }

  private onQueryError(error: unknown): void {
    if (!this.isReady) {
      this.context.fail(`could not read the trace: ${message(error)}`);
      this.destroy();
      return;
    }
    this.setStatus(`query failed: ${message(error)}`, "error");
  }

  private setStatus(text: string, state: "ok" | "error"): void {
    this.status.textContent = text;
    this.status.setAttribute("data-state", state);
  }

  // ------------------------------------------------------------------ view

  private setView(view: TimeRange): void {
    const next = clampView(view, this.span);
    if (next.start_ps === this.view.start_ps && next.end_ps === this.view.end_ps) return;
    this.view = next;
    this.dataDirty = true;
    this.scheduleUrl();
    this.requestFrame();
  }

  private resetZoom(): void {
    this.setView(wholeProfile(this.span));
  }

  private clampScroll(): void {
    const most = Math.max(0, this.layout.height - this.plotHeight());
    this.scrollTop = Math.min(most, Math.max(0, this.scrollTop));
  }

  private scrollBy(dy: number): void {
    const before = this.scrollTop;
    this.scrollTop += dy;
    this.clampScroll();
    if (this.scrollTop !== before) {
      this.dataDirty = true;
      this.requestFrame();
    }
  }

  /** Scrolls so lane (track, depth) is on screen, expanding its section. */
  private reveal(track: number, depth: number): void {
    const section = this.layout.trackSection[track];
    if (section !== undefined && section >= 0) {
      const name = this.layout.sections[section] as string;
      if (this.collapsed.has(name)) this.toggleSection(name);
    }
    const y = this.layout.laneY(track, depth);
    if (Number.isNaN(y)) return;
    const screen = this.plotHeight();
    if (y < this.scrollTop || y + LANE_HEIGHT > this.scrollTop + screen) {
      this.scrollTop = y - screen / 2;
      this.clampScroll();
      this.dataDirty = true;
      this.requestFrame();
    }
  }

  private toggleSection(name: string): void {
    if (this.collapsed.has(name)) this.collapsed.delete(name);
    else this.collapsed.add(name);
    this.layout = new Layout(this.info.sections, this.info.tracks, this.collapsed);
    this.clampScroll();
    this.dataDirty = true;
    this.requestFrame();
  }

  private scheduleUrl(): void {
    if (this.urlTimer) return;
    this.urlTimer = setTimeout(() => {
      this.urlTimer = null;
      if (this.destroyed) return;
      const params = new URLSearchParams(location.search);
      if (params.get("tool") !== this.selection.tool || params.get("run") !== this.selection.run) return;
      params.set("start_ps", String(Math.round(this.view.start_ps)));
      params.set("end_ps", String(Math.round(this.view.end_ps)));
      const url = `${location.pathname}?${params.toString()}`;
      if (url !== `${location.pathname}${location.search}`) history.replaceState(history.state, "", url);
      this.updateExport();
    }, URL_DELAY_MS);
  }

  private updateExport(): void {
    this.exportLink.href = exportUrl(this.selection, this.view.start_ps, this.view.end_ps);
  }

  // ------------------------------------------------------------------ input

  private local(event: MouseEvent): { x: number; y: number } {
    const box = this.canvas.getBoundingClientRect();
    return { x: event.clientX - box.left, y: event.clientY - box.top };
  }

  private onWheel(event: WheelEvent): void {
    event.preventDefault();
    const unit = event.deltaMode === 1 ? 16 : event.deltaMode === 2 ? this.plotHeight() : 1;
    const dx = event.deltaX * unit;
    const dy = event.deltaY * unit;
    const { x } = this.local(event);
    this.mouse.x = x;
    this.mouse.inside = true;
    const psPerPx = (this.view.end_ps - this.view.start_ps) / plotWidth(this.width);
    if (event.ctrlKey || event.metaKey) {
      // Perfetto: ctrl+wheel (and trackpad pinch, which arrives as ctrl+wheel) zooms.
      this.setView(zoomAt(this.view, Math.exp(Math.max(-1, Math.min(1, dy * 0.004))), this.anchor(), this.span));
    } else if (event.shiftKey) {
      this.setView(panBy(this.view, (dy || dx) * psPerPx, this.span));
    } else {
      if (dx) this.setView(panBy(this.view, dx * psPerPx, this.span));
      if (dy) this.scrollBy(dy);
    }
  }

  private onPointerDown(event: PointerEvent): void {
    const { x, y } = this.local(event);
    this.mouse = { x, y, inside: true };
    this.canvas.focus({ preventScroll: true });
    if (event.button !== 0 && event.button !== 1) return;
    this.canvas.setPointerCapture(event.pointerId);
    this.hideTooltip();
    if (event.button === 1 || (y < AXIS_HEIGHT && x >= GUTTER_WIDTH)) {
      event.preventDefault();
      this.drag = { kind: "pan", x0: x, y0: y, view0: this.view, scroll0: this.scrollTop, vertical: event.button === 1, moved: false };
      return;
    }
    if (y < AXIS_HEIGHT) return;
    const hit = this.layout.hit(y - AXIS_HEIGHT + this.scrollTop);
    if (hit?.kind === "section") {
      this.drag = { kind: "section", section: hit.section, name: this.layout.sections[hit.section] as string, moved: false, x0: x, y0: y };
      return;
    }
    if (x < GUTTER_WIDTH) {
      // Dragging the track names scrolls vertically.
      this.drag = { kind: "pan", x0: x, y0: y, view0: this.view, scroll0: this.scrollTop, vertical: true, moved: false };
      return;
    }
    if (this.tool === "timing") {
      this.drag = { kind: "timing", t0: timeAt(x, this.view, this.width), moved: false };
    } else {
      this.drag = { kind: "select", x0: x, y0: y, moved: false };
    }
  }

  private onPointerMove(event: PointerEvent): void {
    const { x, y } = this.local(event);
    this.mouse = { x, y, inside: true };
    const drag = this.drag;
    if (!drag) {
      this.hoverDirty = true;
      this.requestFrame();
      return;
    }
    switch (drag.kind) {
      case "pan": {
        const dx = x - drag.x0;
        const dy = y - drag.y0;
        if (Math.abs(dx) + Math.abs(dy) > DRAG_SLOP_PX) drag.moved = true;
        if (drag.x0 >= GUTTER_WIDTH) {
          const psPerPx = (drag.view0.end_ps - drag.view0.start_ps) / plotWidth(this.width);
          this.setView(panBy(drag.view0, -dx * psPerPx, this.span));
        }
        if (drag.vertical) {
          this.scrollTop = drag.scroll0 - dy;
          this.clampScroll();
          this.dataDirty = true;
          this.requestFrame();
        }
        break;
      }
      case "select": {
        if (!drag.moved && Math.abs(x - drag.x0) + Math.abs(y - drag.y0) <= DRAG_SLOP_PX) return;
        drag.moved = true;
        const t0 = timeAt(drag.x0, this.view, this.width);
        const t1 = timeAt(Math.max(GUTTER_WIDTH, Math.min(this.width, x)), this.view, this.width);
        const c0 = drag.y0 - AXIS_HEIGHT + this.scrollTop;
        const c1 = Math.max(AXIS_HEIGHT, Math.min(this.height, y)) - AXIS_HEIGHT + this.scrollTop;
        this.area = { start_ps: Math.min(t0, t1), end_ps: Math.max(t0, t1), top: Math.min(c0, c1), bottom: Math.max(c0, c1) + 1 };
        this.requestFrame();
        break;
      }
      case "timing": {
        const t = timeAt(Math.max(GUTTER_WIDTH, Math.min(this.width, x)), this.view, this.width);
        if (!drag.moved && Math.abs(xOf(t, this.view, this.width) - xOf(drag.t0, this.view, this.width)) <= DRAG_SLOP_PX) return;
        drag.moved = true;
        this.setTiming({ start_ps: Math.min(drag.t0, t), end_ps: Math.max(drag.t0, t) });
        break;
      }
      case "section":
        if (Math.abs(x - drag.x0) + Math.abs(y - drag.y0) > DRAG_SLOP_PX) drag.moved = true;
        break;
    }
  }

  private onPointerUp(event: PointerEvent): void {
    const drag = this.drag;
    this.drag = null;
    if (this.canvas.hasPointerCapture(event.pointerId)) this.canvas.releasePointerCapture(event.pointerId);
    if (!drag) return;
    const { x, y } = this.local(event);
    if (drag.kind === "section" && !drag.moved) this.toggleSection(drag.name);
    else if (drag.kind === "select") {
      if (drag.moved && this.area) this.summarize(this.area);
      else this.click(x, y);
    }
  }

  private onKeyDown(event: KeyboardEvent): void {
    if (this.destroyed || event.ctrlKey || event.metaKey || event.altKey) return;
    if (isTyping(event.target) || document.querySelector("dialog[open]")) return;
    const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    if (MOTION_KEYS.has(key)) {
      event.preventDefault();
      if (!this.held.has(key)) {
        const now = performance.now();
        this.held.set(key, { since: now, until: Number.POSITIVE_INFINITY });
        this.requestFrame();
      }
      return;
    }
    if (event.repeat) return;
    switch (key) {
      case "0":
        this.resetZoom();
        break;
      case "1":
        this.setTool("select");
        break;
      case "2":
        this.setTool("timing");
        break;
      case "f":
        if (this.selected) {
          const { start_ps, duration_ps } = this.selected;
          const margin = Math.max(duration_ps * 0.1, 1);
          this.setView({ start_ps: start_ps - margin, end_ps: start_ps + duration_ps + margin });
        }
        break;
      case "/":
        this.searchInput.focus();
        break;
      case "Escape":
        this.clearMarks();
        break;
      default:
        return;
    }
    event.preventDefault();
  }

  private onKeyUp(event: KeyboardEvent): void {
    const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    const hold = this.held.get(key);
    if (hold) hold.until = Math.max(performance.now(), hold.since + MIN_HOLD_MS);
  }

  private setTool(tool: Tool): void {
    this.tool = tool;
    for (const [name, button] of Object.entries(this.toolButtons)) button.setAttribute("aria-pressed", String(name === tool));
    this.canvas.setAttribute("data-tool", tool);
  }

  private setTiming(timing: TimeRange | null): void {
    this.timing = timing;
    if (timing) {
      this.measureOut.hidden = false;
      this.measureOut.textContent = `Δ ${formatDuration(timing.end_ps - timing.start_ps)}`;
      this.measureOut.setAttribute("data-value", String(Math.round(timing.end_ps - timing.start_ps)));
    } else {
      this.measureOut.hidden = true;
      this.measureOut.textContent = "";
      this.measureOut.removeAttribute("data-value");
    }
    this.requestFrame();
  }

  /** Esc: the timing measurement, then the range selection, then the selected event. */
  private clearMarks(): void {
    if (this.timing) this.setTiming(null);
    else if (this.area) {
      this.area = null;
      showEmpty(this.details);
    } else if (this.selected) this.select(null);
    this.requestFrame();
  }

  // ------------------------------------------------------------------ hit tests, hover

  private hitAt(x: number, y: number): EventHit | RunHit | null {
    if (!this.prepared || x < GUTTER_WIDTH || y < AXIS_HEIGHT) return null;
    const hit = this.layout.hit(y - AXIS_HEIGHT + this.scrollTop);
    if (hit?.kind !== "lane") return null;
    const psPerPx = (this.view.end_ps - this.view.start_ps) / plotWidth(this.width);
    return this.prepared.hit(hit.track, hit.depth, timeAt(x, this.view, this.width), psPerPx * 1.5);
  }

  private updateHover(): void {
    const { x, y, inside } = this.mouse;
    const hit = inside && !this.drag ? this.hitAt(x, y) : null;
    let cursor = "default";
    if (y < AXIS_HEIGHT && x >= GUTTER_WIDTH) cursor = "grab";
    else if (hit) cursor = "pointer";
    else if (y >= AXIS_HEIGHT && this.layout.hit(y - AXIS_HEIGHT + this.scrollTop)?.kind === "section") cursor = "pointer";
    else if (this.tool === "timing" && x >= GUTTER_WIDTH) cursor = "col-resize";
    if (cursor !== this.cursor) {
      this.canvas.style.cursor = cursor;
      this.cursor = cursor;
    }
    if (!hit) {
      this.hideTooltip();
      return;
    }
    const key = hit.kind === "event" ? `e${hit.id}` : `r${hit.lane}:${hit.row}`;
    if (key !== this.tooltipKey) {
      this.tooltipKey = key;
      if (hit.kind === "event") {
        this.tooltip.replaceChildren(el("strong", {}, hit.name), el("span", {}, formatDuration(hit.duration_ps)));
      } else {
        this.tooltip.replaceChildren(
          el("strong", {}, `${groupThousands(String(hit.count))} merged event${hit.count === 1 ? "" : "s"}`),
          el("span", {}, `${formatDuration(hit.end_ps - hit.start_ps)} · busy ${(hit.busy * 100).toFixed(0)}%`),
        );
      }
      this.tooltip.setAttribute("data-kind", hit.kind);
      this.tooltip.hidden = false;
    }
    const left = Math.max(0, Math.min(x + 14, this.width - 260));
    const top = Math.max(0, y + 18 + 44 > this.height ? y - 44 : y + 18);
    if (left !== this.tooltipX || top !== this.tooltipY) {
      this.tooltipX = left;
      this.tooltipY = top;
      this.tooltip.style.transform = `translate(${left}px, ${top}px)`;
    }
  }

  private hideTooltip(): void {
    if (this.tooltipKey) {
      this.tooltipKey = "";
      this.tooltip.hidden = true;
    }
  }

  private eventAt(id: number): { x: number; y: number } | null {
    const prepared = this.prepared;
    if (!prepared) return null;
    const row = prepared.rowOf(id);
    if (row < 0) return null;
    const hit = prepared.eventHit(row);
    const laneY = this.layout.laneY(hit.track, hit.depth);
    if (Number.isNaN(laneY)) return null;
    const y = AXIS_HEIGHT + laneY - this.scrollTop + LANE_HEIGHT / 2;
    if (y < AXIS_HEIGHT || y > this.height) return null;
    const x0 = Math.max(GUTTER_WIDTH, xOf(hit.start_ps, this.view, this.width));
    const x1 = Math.min(GUTTER_WIDTH + plotWidth(this.width), xOf(hit.start_ps + hit.duration_ps, this.view, this.width));
    if (x1 < GUTTER_WIDTH || x0 > GUTTER_WIDTH + plotWidth(this.width)) return null;
    return { x: (x0 + Math.max(x0, x1)) / 2, y };
  }

  // ------------------------------------------------------------------ selection

  private trackName = (track: number): string => {
    const info = this.info.tracks[track];
    return info ? `${info.section} › ${info.name}` : `track ${track}`;
  };

  private click(x: number, y: number): void {
    this.area = null;
    const hit = this.hitAt(x, y);
    if (!hit) {
      this.select(null);
      return;
    }
    if (hit.kind === "event") {
      this.select({ id: hit.id, name: hit.name, start_ps: hit.start_ps, duration_ps: hit.duration_ps, track: hit.track, depth: hit.depth });
      return;
    }
    this.select(null);
    showRun(this.details, hit, this.trackName, () => {
      this.setView(centreOn(this.view, hit.start_ps, hit.end_ps - hit.start_ps, this.span, plotWidth(this.width), plotWidth(this.width) * 0.8));
    });
  }

  private select(basics: EventBasics | null): void {
    this.detailsController?.abort();
    this.detailsController = null;
    this.selected = basics;
    this.flows = [];
    this.requestFrame();
    if (!basics) {
      showEmpty(this.details);
      return;
    }
    this.area = null;
    const controller = new AbortController();
    this.detailsController = controller;
    const jump = (end: FlowEnd): void => this.jumpTo(end);
    showEvent(this.details, basics, this.trackName, null, jump);
    getEvent(this.selection, basics.id, controller.signal).then(
      (answer: EventAnswer) => {
        if (this.detailsController !== controller) return;
        this.flows = answer.flows;
        showEvent(this.details, basics, this.trackName, answer, jump);
        this.requestFrame();
      },
      (error: unknown) => {
        if (this.detailsController !== controller || error instanceof Cancelled) return;
        showEvent(this.details, basics, this.trackName, null, jump, `could not read the event's details: ${message(error)}`);
      },
    );
  }

  /** Selects a flow's other end and brings it on screen. */
  private jumpTo(end: FlowEnd): void {
    if (end.id === undefined || end.track === undefined) return;
    const basics: EventBasics = { id: end.id, name: end.name, start_ps: end.start_ps, duration_ps: end.duration_ps, track: end.track, depth: end.depth ?? 0 };
    this.setView(centreOn(this.view, basics.start_ps, basics.duration_ps, this.span, plotWidth(this.width)));
    this.reveal(basics.track, basics.depth);
    this.select(basics);
  }

  private summarize(area: AreaMark): void {
    this.select(null);
    this.area = area;
    const tracks = this.layout.tracksBetween(area.top, area.bottom);
    if (tracks.length === 0) {
      showSummary(this.details, { start_ps: area.start_ps, end_ps: area.end_ps }, { start_ps: area.start_ps, end_ps: area.end_ps, events: 0, names: [] });
      this.requestFrame();
      return;
    }
    const range = { start_ps: Math.max(0, Math.floor(area.start_ps)), end_ps: Math.max(1, Math.ceil(area.end_ps)) };
    const controller = new AbortController();
    this.detailsController = controller;
    showSummary(this.details, range, null);
    getSummary(this.selection, range.start_ps, range.end_ps, this.layout.isEverything(tracks) ? null : tracks, controller.signal).then(
      (summary) => {
        if (this.detailsController === controller) showSummary(this.details, range, summary);
      },
      (error: unknown) => {
        if (this.detailsController === controller && !(error instanceof Cancelled)) showSummary(this.details, range, null, message(error));
      },
    );
    this.requestFrame();
  }

  // ------------------------------------------------------------------ search

  /** Draws only the events matching the search text while "Only matches" is ticked. */
  private applyFilter(): void {
    const filter = this.filterBox.checked ? this.searchInput.value.trim() : "";
    if (filter === this.filter) return;
    this.filter = filter;
    this.canvas.setAttribute("data-filter", filter);
    this.dataDirty = true;
    this.requestFrame();
  }

  private setSearchStatus(text: string, match: Match | null, total?: number): void {
    this.searchStatus.textContent = text;
    if (match) {
      this.searchStatus.setAttribute("data-ordinal", String(match.ordinal + 1));
      this.searchStatus.setAttribute("data-total", String(match.total));
    } else {
      this.searchStatus.removeAttribute("data-ordinal");
      if (total === undefined) this.searchStatus.removeAttribute("data-total");
      else this.searchStatus.setAttribute("data-total", String(total));
    }
  }

  private async find(before: boolean): Promise<void> {
    const text = this.searchInput.value.trim();
    if (!text) {
      this.setSearchStatus("", null);
      return;
    }
    this.findController?.abort();
    const controller = new AbortController();
    this.findController = controller;
    const current = this.match && this.match.text === text ? this.match : null;
    this.searchStatus.setAttribute("data-state", "searching");
    try {
      let found = await findNext(this.selection, text, current ? { after_id: current.id, before } : { before }, controller.signal);
      // Past the last (first) match: wrap around.
      if (!found && current) found = await findNext(this.selection, text, { before }, controller.signal);
      if (this.findController !== controller) return;
      this.searchStatus.setAttribute("data-state", "done");
      if (!found) {
        this.match = null;
        this.setSearchStatus("no matches", null, 0);
        return;
      }
      this.match = { ...found, text };
      this.setSearchStatus(`${found.ordinal + 1} of ${found.total}`, found);
      this.setView(centreOn(this.view, found.start_ps, found.duration_ps, this.span, plotWidth(this.width)));
      this.reveal(found.track, found.depth);
      this.select({ id: found.id, name: found.name, start_ps: found.start_ps, duration_ps: found.duration_ps, track: found.track, depth: found.depth });
    } catch (error) {
      if (error instanceof Cancelled || this.findController !== controller) return;
      this.searchStatus.setAttribute("data-state", "error");
      this.setSearchStatus(`search failed: ${message(error)}`, null);
    }
  }
}
