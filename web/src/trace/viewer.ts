/**
 * The trace viewer page: a canvas timeline over the server's index (docs/dashboard.md,
 * "Trace viewer API"), navigated like Perfetto and chrome://tracing.
 *
 * - Frames (frame_loop.ts): requestAnimationFrame only, drawn from the last query answer
 *   scaled to the current view (render.ts); held W/A/S/D animate from frame to frame.
 * - Data: after a frame whose view, scroll or size changed, the viewer checks whether the
 *   newest request still covers the view (range with a margin, pixel density, visible
 *   tracks); if not it asks the RequestScheduler for the view plus half a view each side,
 *   at screen density, for the visible tracks plus a screen above and below. The scheduler
 *   sends once the view has been still for 50 ms (or every 250 ms while it keeps moving),
 *   one request at a time, newest wins.
 * - Tools: select (click an event: details and flow arrows; drag: aggregates of the range
 *   and tracks dragged over) and timing (drag to measure; Esc clears).
 * - Address: `start_ps`/`end_ps` follow the view through history.replaceState (url_sync.ts).
 *
 * - Instances: a page may hold more than one viewer (the paired trace view, pages/diff_trace.ts).
 *   What would clash is made per viewer by `ViewerOptions`: ids get a prefix, the hooks a
 *   name, window keys a scope (the viewer holding the focus), the address is left alone
 *   (two views cannot share one `start_ps`), the opening view is given, and the page's
 *   height is shared by the page's own fit. Each viewer keeps its own frame loop: two
 *   requestAnimationFrame callbacks land in the same frame, each drawing only when its
 *   own view, data or hover changed.
 *
 * This class wires the parts (state: view_state.ts; input: input.ts, gestures.ts; DOM:
 * panels.ts, details.ts; frames: frame_loop.ts; selection.ts, search.ts, url_sync.ts), owns
 * the data, and carries out the input's intents.
 */

import { getToolJson, type CriticalPath } from "../api";
import type { MountContext } from "../pages/types";
import { Cancelled, errorText, exportUrl, getQuery, getTracks, type TracksInfo } from "./api";
import type { TraceAnswer } from "./decode";
import { showEmpty, showKeys, type EventBasics } from "./details";
import { DetailsPane } from "./details_pane";
import "./details_pane.css";
import { FrameLoop, type FrameClient } from "./frame_loop";
import type { DragStep } from "./gestures";
import { installHooks, removeHooks } from "./hooks";
import { InputController, type Intents } from "./input";
import { Prepared, type RunHit } from "./model";
import { answerText, buildPanels, fitHeight, HoverView, showStatus, showTiming, showTool, sizeCanvas, type Panels } from "./panels";
import { Renderer, type AreaMark } from "./render";
import { RequestScheduler } from "./scheduler";
import { CRITICAL_PATH_PARAM, FIND_PARAM } from "../state/url";
import { overlayAt, trackIds } from "./critical_overlay";
import { loadCollapsed, saveCollapsed } from "./collapsed";
import { Search } from "./search";
import { SelectionDetails } from "./selection";
import { DetailsSplitter } from "./splitter";
import { sameParams, type QueryParams, type TimeRange } from "./timeline";
import { UrlSync, viewFromAddress } from "./url_sync";
import { ViewState, type Tool } from "./view_state";

export type { TraceHooks } from "./hooks";

/** What differs for a viewer that shares its page with another (defaults: the single viewer). */
export interface ViewerOptions {
  /** The view it opens on; else the address's `start_ps`/`end_ps`, else the whole profile. */
  view?: TimeRange;
  /** Whether the address follows the view and `&find=` is read from it (default true). */
  address?: boolean;
  /** Its hooks go to `window.__stepscope.traces[name]` (else `window.__stepscope.trace`). */
  name?: string;
  /** Put before every id of its DOM. */
  idPrefix?: string;
  /** The time its axis counts from, ps from the profile start (default 0). */
  axisOrigin_ps?: number;
  /** Sets the height of its root (default: the window below the header). */
  fit?: (root: HTMLElement) => void;
  /** Window keys only while the focus is inside the viewer (default false). */
  focusedKeys?: boolean;
}

export async function mountTraceViewer(root: HTMLElement, context: MountContext, options: ViewerOptions = {}): Promise<TraceViewer | null> {
  let info: TracksInfo;
  try {
    info = await getTracks(context.selection, context.signal, context.onPending);
  } catch (error) {
    if (error instanceof Cancelled || context.signal.aborted) return null;
    context.fail(errorText(error));
    return null;
  }
  if (context.signal.aborted) return null;
  const viewer = new TraceViewer(root, context, info, options);
  context.signal.addEventListener("abort", () => viewer.destroy(), { once: true });
  return viewer;
}

export class TraceViewer implements Intents, FrameClient {
  private readonly state: ViewState;
  private readonly panels: Panels;
  private readonly hoverView: HoverView;
  private readonly renderer: Renderer;
  private readonly scheduler: RequestScheduler<QueryParams, TraceAnswer>;
  private readonly loop: FrameLoop;
  private readonly url: UrlSync | null;
  private readonly details: SelectionDetails;
  private readonly search: Search;
  private readonly input: InputController;
  private readonly resizeObserver: ResizeObserver;
  private readonly splitter: DetailsSplitter;
  private readonly pane: DetailsPane;
  private answer: Prepared | null = null;
  private isReady = false;
  /** The last data check found no track to ask for (all collapsed, an empty profile). */
  private nothingToAsk = false;
  private destroyed = false;
  /** The critical_path tool's JSON, once the overlay asked for it; and the tracks by (plane, line). */
  private pathData: Promise<CriticalPath | null> | null = null;
  private readonly pathTracks: Map<string, number>;

  constructor(
    root: HTMLElement,
    private readonly context: MountContext,
    info: TracksInfo,
    private readonly options: ViewerOptions = {},
  ) {
    const selection = context.selection;
    const followsAddress = options.address ?? true;
    const opening = options.view ?? viewFromAddress(followsAddress ? location.search : "", Math.max(1, info.span_ps));
    const state = new ViewState(info, opening, loadCollapsed(selection));
    this.state = state;
    this.pathTracks = trackIds(info.tracks);
    this.panels = buildPanels(info.event_count, {
      tool: (tool) => this.setTool(tool),
      reset: () => this.resetZoom(),
      find: (before) => void this.search.find(before),
      leaveSearch: () => {
        this.panels.searchInput.blur();
        this.panels.canvas.focus({ preventScroll: true });
      },
      searchEdited: () => this.search.edited(),
      filterToggled: () => this.search.applyFilter(),
      exporting: () => this.updateExport(),
      keys: () => (this.pane.kind === "keys" ? showEmpty(this.panels.details) : showKeys(this.panels.details)),
      closeDetails: () => {
        this.state.area = null;
        this.details.select(null);
        this.panels.canvas.focus({ preventScroll: true });
      },
      criticalPath: () => void this.togglePath(),
    }, options.idPrefix);
    root.replaceChildren(this.panels.root);
    showEmpty(this.panels.details);
    this.hoverView = new HoverView(this.panels.canvas, this.panels.tooltip);

    const ctx = this.panels.canvas.getContext("2d", { alpha: false });
    if (!ctx) throw new Error("this browser has no 2D canvas");
    this.renderer = new Renderer(ctx, options.axisOrigin_ps);
    this.scheduler = new RequestScheduler<QueryParams, TraceAnswer>({
      fetch: (params, signal) => getQuery(selection, params, signal),
      onAnswer: (answer, params) => this.onAnswer(answer, params),
      onError: (error) => this.onQueryError(error),
      same: sameParams,
    });
    this.input = new InputController(this.panels.canvas, state, this, options.focusedKeys ? this.panels.root : null);
    this.loop = new FrameLoop({ state, held: this.input.held, renderer: this.renderer, hover: this.hoverView, canvas: this.panels.canvas }, this);
    this.url = followsAddress ? new UrlSync({ selection, view: () => state.view, synced: () => this.updateExport() }) : null;
    const show = (basics: EventBasics): void => this.show(basics);
    const redraw = (): void => this.loop.request();
    this.details = new SelectionDetails(this.panels.details, selection, state, { redraw, show, zoomToRun: (run) => this.zoomToRun(run) });
    this.search = new Search(this.panels, selection, state, {
      show,
      filterChanged: () => {
        this.panels.canvas.setAttribute("data-filter", state.filter);
        this.loop.dataChanged();
      },
    });

    this.splitter = new DetailsSplitter(this.panels.root, this.panels.wrap, this.panels.splitter, this.panels.details);
    this.pane = new DetailsPane(this.panels.root, this.panels.details, this.panels.keysButton, () => this.splitter.fit());
    // The canvas follows its wrap, which the window and the splitter resize.
    this.resizeObserver = new ResizeObserver(() => this.measure());
    this.resizeObserver.observe(this.panels.wrap);
    this.fitPage();
    this.measure();
    installHooks(this, {
      view: () => ({ start_ps: Math.round(state.view.start_ps), end_ps: Math.round(state.view.end_ps) }),
      drawn: () => {
        const { events, runs, lanes, sections } = this.renderer.stats;
        return { events, runs, lanes, sections: [...sections], requests: this.scheduler.requests };
      },
      eventAt: (id) => state.eventAt(id, this.answer),
      frameTimes: this.loop.frameTimes,
      frameIntervals: this.loop.frameIntervals,
      setView: (start_ps, end_ps) => this.setView({ start_ps, end_ps }),
      collapsed: () => [...state.collapsed],
      axisOrigin: () => this.renderer.axisOrigin_ps,
      criticalPath: () => {
        const path = state.path;
        if (!path) return null;
        return { step: path.step, segments: path.marks.length, placed: path.marks.filter((mark) => mark.track >= 0).length, drawn: this.renderer.stats.pathMarks };
      },
    }, options.name);
    this.updateExport();
    this.panels.canvas.focus({ preventScroll: true });
    // The first request goes at once: nothing is on screen yet.
    this.wantData(true);
    this.loop.request();
    // A link from a tool's op row (`&find=<name>`): search for it and go to the first match.
    const wanted = followsAddress ? new URLSearchParams(location.search).get(FIND_PARAM) : null;
    if (wanted) {
      this.panels.searchInput.value = wanted;
      void this.search.find(false);
    }
    if (followsAddress && new URLSearchParams(location.search).get(CRITICAL_PATH_PARAM) === "1") void this.togglePath();
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.scheduler.close();
    this.details.close();
    this.search.close();
    this.loop.close();
    this.url?.close();
    this.resizeObserver.disconnect();
    this.splitter.close();
    this.pane.close();
    this.input.close();
    removeHooks(this, this.options.name);
  }

  private measure(): void {
    const { wrap, canvas } = this.panels;
    const dpr = window.devicePixelRatio || 1;
    if (!this.state.resize(Math.max(1, wrap.clientWidth), Math.max(1, wrap.clientHeight), dpr)) return;
    sizeCanvas(canvas, this.state.width, this.state.height, dpr);
    this.loop.markData();
    // Drawn now, not on the next frame: a resized canvas is blank until drawn.
    this.loop.draw();
  }

  // ------------------------------------------------------------------ frames and data (FrameClient)

  prepared(): Prepared | null {
    return this.answer;
  }

  dragging(): boolean {
    return this.input.dragging;
  }

  checkData(): void {
    this.wantData(false);
  }

  drawn(): void {
    if (!this.isReady && (this.answer || this.nothingToAsk)) {
      this.isReady = true;
      this.context.ready();
      // The shell's "Loading…" line above is gone: take the room it leaves.
      this.fitPage();
    }
  }

  private wantData(now: boolean): void {
    if (this.state.width <= 1) return;
    const need = this.state.dataNeed(this.scheduler.latest);
    if (need.kind === "covered") return;
    this.nothingToAsk = need.kind === "nothing";
    if (need.kind === "query") this.scheduler.want(need.params, now);
  }

  private onAnswer(answer: TraceAnswer, params: QueryParams): void {
    this.answer = new Prepared(answer, params);
    showStatus(this.panels.status, answerText(answer), "ok");
    this.loop.dataChanged();
  }

  private onQueryError(error: unknown): void {
    if (!this.isReady) {
      this.context.fail(`could not read the trace: ${errorText(error)}`);
      this.destroy();
      return;
    }
    showStatus(this.panels.status, `query failed: ${errorText(error)}`, "error");
  }

  private updateExport(): void {
    const range = this.state.exportRange();
    this.panels.exportLink.href = exportUrl(this.context.selection, range.start_ps, range.end_ps);
    this.panels.exportPerfettoLink.href = exportUrl(this.context.selection, range.start_ps, range.end_ps, "pftrace");
  }

  // ------------------------------------------------------------------ the critical path overlay

  /** Turns the overlay on (asking for the critical_path tool's JSON the first time) or off. */
  private async togglePath(): Promise<void> {
    const button = this.panels.pathButton;
    if (button.getAttribute("aria-pressed") === "true") {
      button.setAttribute("aria-pressed", "false");
      this.state.path = null;
      this.loop.request();
      return;
    }
    button.setAttribute("aria-pressed", "true");
    this.pathData ??= getToolJson<CriticalPath>("data", { ...this.context.selection, tool: "critical_path", options: {} }, () => undefined, this.context.signal).catch(
      (error: unknown) => {
        if (!(error instanceof Cancelled)) showStatus(this.panels.status, `critical path: ${errorText(error)}`, "error");
        return null;
      },
    );
    await this.pathData;
    this.placePath();
  }

  /** The overlay follows the view to the step it is on (its middle's). */
  private placePath(): void {
    if (this.panels.pathButton.getAttribute("aria-pressed") !== "true") return;
    void this.pathData?.then((data) => {
      if (!data || this.panels.pathButton.getAttribute("aria-pressed") !== "true") return;
      const middle = (this.state.view.start_ps + this.state.view.end_ps) / 2;
      const overlay = overlayAt(data, this.pathTracks, middle);
      if (overlay?.index === this.state.path?.index) return;
      this.state.path = overlay;
      this.loop.request();
    });
  }

  // ------------------------------------------------------------------ intents (Intents)

  setView(view: TimeRange): void {
    if (!this.state.setView(view)) return;
    this.url?.schedule();
    this.loop.dataChanged();
    if (this.state.path) this.placePath();
  }

  resetZoom(): void {
    this.setView(this.state.wholeProfile());
  }

  setTool(tool: Tool): void {
    this.state.tool = tool;
    showTool(this.panels, tool);
  }

  private setTiming(timing: TimeRange | null): void {
    this.state.timing = timing;
    showTiming(this.panels.measureOut, timing);
    this.loop.request();
  }

  /** Brings an event on screen (expanding its section) and selects it. */
  private show(basics: EventBasics): void {
    this.setView(this.state.centredOn(basics.start_ps, basics.duration_ps));
    if (this.state.reveal(basics.track, basics.depth)) this.loop.dataChanged();
    this.details.select(basics);
  }

  private zoomToRun(run: RunHit): void {
    this.setView(this.state.centredOn(run.start_ps, run.end_ps - run.start_ps, this.state.plotWidth() * 0.8));
  }

  pointerMoved(): void {
    this.loop.hoverChanged();
  }

  hideTooltip(): void {
    this.hoverView.hide();
  }

  drag(step: DragStep): void {
    if (step.view) this.setView(step.view);
    if (step.scrollTop !== undefined) {
      this.state.scrollTo(step.scrollTop);
      this.loop.dataChanged();
    }
    if (step.area) {
      this.state.area = step.area;
      this.loop.request();
    }
    if (step.timing) this.setTiming(step.timing);
  }

  scroll(px: number): void {
    if (this.state.scrollBy(px)) this.loop.dataChanged();
  }

  toggleSection(name: string): void {
    this.state.toggleSection(name);
    saveCollapsed(this.context.selection, this.state.collapsed);
    this.loop.dataChanged();
  }

  summarize(area: AreaMark): void {
    this.details.summarize(area);
  }

  click(x: number, y: number): void {
    this.state.area = null;
    this.details.pick(this.state.hitAt(x, y, this.answer));
  }

  frameSelection(): void {
    const framing = this.state.framing();
    if (framing) this.setView(framing);
  }

  focusSearch(): void {
    this.panels.searchInput.focus();
  }

  clearMarks(): void {
    const what = this.state.nextToClear();
    if (what === "timing") this.setTiming(null);
    else if (what === "area") this.details.clearArea();
    else if (what === "selection") this.details.select(null);
    else showEmpty(this.panels.details); // nothing marked: Esc closes the pane (a run, the keys)
    this.loop.request();
  }

  motion(): void {
    this.loop.request();
  }

  windowResized(): void {
    this.fitPage();
  }

  /** The viewer fills the window below the header; the details pane keeps its chosen height
   * where there is room for it. */
  private fitPage(): void {
    (this.options.fit ?? fitHeight)(this.panels.root);
    if (this.pane.open) this.splitter.fit(); // closed, it is fitted when it opens
  }
}
