/**
 * Draws one frame of the trace viewer on a 2D canvas from the last answer, scaled and moved
 * to the current view (so a frame never waits for the network): time axis on top, section
 * headers and lanes below, events batched by colour (one fillStyle per palette entry), runs
 * batched by opacity, names where a box is wide enough, then the selection, the timing
 * measurement and flow arrows. The frame allocates almost nothing: buffers are reused and
 * names, labels and their widths are cached.
 */

import { groupThousands } from "../format";
import type { Flow, FlowEnd } from "./api";
import type { PathOverlay } from "./critical_overlay";
import { LANE_HEIGHT, SECTION_HEIGHT, type Layout, type Row } from "./layout";
import type { Prepared } from "./model";
import { PALETTE, RUN_ALPHA_STEPS, RUN_COLOR, TEXT_ON, runAlpha } from "./palette";
import { formatDuration, tickLabel, tickStep, type TimeRange } from "./timeline";

export const AXIS_HEIGHT = 26;
export const GUTTER_WIDTH = 232;
export const SCROLLBAR_WIDTH = 8;
/** Boxes narrower than this get no name. */
export const NAME_MIN_PX = 30;

const FONT = "11px system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif";
const BOLD_FONT = "600 11px system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif";
const COLORS = {
  background: "#ffffff",
  gutter: "#f8f9fb",
  section: "#e9edf2",
  sectionText: "#202124",
  muted: "#5f6368",
  separator: "#e3e6ea",
  grid: "#eef0f3",
  axis: "#f3f4f6",
  axisText: "#3c4043",
  selection: "#111111",
  area: "rgba(26, 115, 232, 0.12)",
  areaEdge: "rgba(26, 115, 232, 0.8)",
  timing: "#b3261e",
  timingBand: "rgba(179, 38, 30, 0.07)",
  flow: "#d35400",
  path: "#202124",
  scroll: "rgba(60, 64, 67, 0.35)",
};

export interface AreaMark {
  start_ps: number;
  end_ps: number;
  /** Content y range the drag covered. */
  top: number;
  bottom: number;
}

export interface Scene {
  /** CSS pixels. */
  width: number;
  height: number;
  dpr: number;
  view: TimeRange;
  scrollTop: number;
  layout: Layout;
  prepared: Prepared | null;
  selectedId: number | null;
  area: AreaMark | null;
  timing: TimeRange | null;
  flows: readonly Flow[];
  /** The critical path overlay; null while its toggle is off. */
  path: PathOverlay | null;
}

/** What the last frame drew (the test hooks' `drawn()`). */
export interface DrawnStats {
  events: number;
  runs: number;
  lanes: number;
  /** The section headers drawn (on screen), top to bottom. */
  sections: string[];
  /** The critical path's segments drawn (in the view, on a shown track or section). */
  pathMarks: number;
}

export function plotWidth(width: number): number {
  return Math.max(1, width - GUTTER_WIDTH - SCROLLBAR_WIDTH);
}

/** Screen x (CSS px) of absolute time t in a view drawn `width` px wide. */
export function xOf(t_ps: number, view: TimeRange, width: number): number {
  return GUTTER_WIDTH + ((t_ps - view.start_ps) * plotWidth(width)) / (view.end_ps - view.start_ps);
}

/** Absolute time at screen x. */
export function timeAt(x: number, view: TimeRange, width: number): number {
  return view.start_ps + ((x - GUTTER_WIDTH) * (view.end_ps - view.start_ps)) / plotWidth(width);
}

export class Renderer {
  readonly stats: DrawnStats = { events: 0, runs: 0, lanes: 0, sections: [], pathMarks: 0 };
  private laneScreen = new Float64Array(64);
  private readonly widths = new Map<string, number>();
  private readonly clipped = new Map<number, string>();
  private clippedFor: Prepared | null = null;
  private strip: HTMLCanvasElement | null = null;
  private stripFor: Prepared | null = null;
  private font = "";

  /**
   * `axisOrigin_ps`: the time the axis counts from (ps from the profile start; 0 for the
   * profile start). The paired trace view sets each viewer's to its step's start, so the
   * same offset into both steps has the same label and tick.
   */
  constructor(
    private readonly ctx: CanvasRenderingContext2D,
    readonly axisOrigin_ps = 0,
  ) {}

  /** The first tick at or after `start_ps`, ticks every `step` from the axis origin. */
  private firstTick(start_ps: number, step: number): number {
    const origin = this.axisOrigin_ps;
    return origin + Math.ceil((start_ps - origin) / step) * step;
  }

  private setFont(font: string): void {
    if (this.font !== font) {
      this.ctx.font = font;
      this.font = font;
    }
  }

  private textWidth(text: string): number {
    let width = this.widths.get(text);
    if (width === undefined) {
      if (this.widths.size > 20_000) this.widths.clear();
      width = this.ctx.measureText(text).width;
      this.widths.set(text, width);
    }
    return width;
  }

  /** `text` cut with an ellipsis to fit `room` px (cached under `key`), "" when nothing fits. */
  private fitted(text: string, room: number, key: number, cache: Map<number, string>): string {
    const full = this.textWidth(text);
    if (full <= room) return text;
    const chars = Math.floor((text.length * room) / full) - 1;
    if (chars < 2) return "";
    const cacheKey = key * 4096 + Math.min(chars, 4095);
    let cut = cache.get(cacheKey);
    if (cut === undefined) {
      if (cache.size > 20_000) cache.clear();
      cut = `${text.slice(0, chars)}…`;
      cache.set(cacheKey, cut);
    }
    return cut;
  }

  draw(scene: Scene): void {
    const ctx = this.ctx;
    // Set every frame (the canvas' size may have changed, which resets the context).
    this.font = "";
    ctx.setTransform(scene.dpr, 0, 0, scene.dpr, 0, 0);
    ctx.globalAlpha = 1;
    ctx.fillStyle = COLORS.background;
    ctx.fillRect(0, 0, scene.width, scene.height);
    this.stats.events = 0;
    this.stats.runs = 0;
    this.stats.lanes = 0;
    this.stats.sections.length = 0;
    const length = scene.view.end_ps - scene.view.start_ps;
    const psPerPx = length / plotWidth(scene.width);
    const step = tickStep(psPerPx);

    ctx.save();
    ctx.beginPath();
    ctx.rect(0, AXIS_HEIGHT, scene.width, scene.height - AXIS_HEIGHT);
    ctx.clip();
    this.drawRows(scene, step);
    ctx.beginPath();
    ctx.rect(GUTTER_WIDTH, AXIS_HEIGHT, plotWidth(scene.width), scene.height - AXIS_HEIGHT);
    ctx.clip();
    if (scene.prepared) this.drawAnswer(scene, scene.prepared);
    this.stats.pathMarks = scene.path ? this.drawPath(scene, scene.path) : 0;
    if (scene.area) this.drawArea(scene, scene.area);
    if (scene.flows.length > 0) this.drawFlows(scene);
    ctx.restore();
    this.drawAxis(scene, step);
    if (scene.timing) this.drawTiming(scene, scene.timing);
    this.drawScrollbar(scene);
  }

  private drawRows(scene: Scene, step: number): void {
    const ctx = this.ctx;
    const { layout, scrollTop, width, height } = scene;
    const bottom = scrollTop + height - AXIS_HEIGHT;
    ctx.fillStyle = COLORS.gutter;
    ctx.fillRect(0, AXIS_HEIGHT, GUTTER_WIDTH, height - AXIS_HEIGHT);
    // Grid lines at the ticks.
    ctx.fillStyle = COLORS.grid;
    const first = this.firstTick(scene.view.start_ps, step);
    for (let t = first; t <= scene.view.end_ps; t += step) {
      ctx.fillRect(Math.round(xOf(t, scene.view, width)), AXIS_HEIGHT, 1, height - AXIS_HEIGHT);
    }
    ctx.textBaseline = "middle";
    for (let at = layout.firstRowBelow(scrollTop); at < layout.rows.length; at++) {
      const row = layout.rows[at] as Row;
      if (row.y >= bottom) break;
      const y = AXIS_HEIGHT + row.y - scrollTop;
      if (row.kind === "section") {
        ctx.fillStyle = COLORS.section;
        ctx.fillRect(0, y, width, row.height);
        ctx.fillStyle = COLORS.separator;
        ctx.fillRect(0, y + row.height - 1, width, 1);
        const header = this.header(row);
        this.stats.sections.push(row.name);
        ctx.fillStyle = COLORS.sectionText;
        this.setFont(BOLD_FONT);
        ctx.fillText(header.title, 8, y + row.height / 2);
        ctx.fillStyle = COLORS.muted;
        this.setFont(FONT);
        ctx.fillText(header.detail, header.detailX, y + row.height / 2);
      } else {
        ctx.fillStyle = COLORS.separator;
        ctx.fillRect(0, y + row.height - 1, width, 1);
        ctx.fillStyle = COLORS.sectionText;
        this.setFont(FONT);
        const name = this.fitted(row.track.name, GUTTER_WIDTH - 22, row.track.id, this.trackNames);
        ctx.fillText(name, 14, y + LANE_HEIGHT / 2);
      }
    }
    ctx.fillStyle = COLORS.separator;
    ctx.fillRect(GUTTER_WIDTH - 1, AXIS_HEIGHT, 1, height - AXIS_HEIGHT);
  }

  private readonly trackNames = new Map<number, string>();
  private readonly headers = new WeakMap<Row, { title: string; detail: string; detailX: number }>();

  /** A section header's texts (made once per layout row). */
  private header(row: Row & { kind: "section" }): { title: string; detail: string; detailX: number } {
    let header = this.headers.get(row);
    if (!header) {
      const title = `${row.collapsed ? "▸" : "▾"}  ${row.name}`;
      this.setFont(BOLD_FONT);
      const titleWidth = this.ctx.measureText(title).width;
      const detail = `${row.trackCount} track${row.trackCount === 1 ? "" : "s"} · ${groupThousands(String(row.eventCount))} events`;
      header = { title, detail, detailX: 8 + titleWidth + 12 };
      this.headers.set(row, header);
    }
    return header;
  }

  private drawAnswer(scene: Scene, prepared: Prepared): void {
    const ctx = this.ctx;
    const { layout, scrollTop, width, height, view } = scene;
    const answer = prepared.answer;
    const lanes = answer.laneTrack.length;
    if (this.laneScreen.length < lanes) this.laneScreen = new Float64Array(Math.max(lanes, this.laneScreen.length * 2));
    const laneScreen = this.laneScreen;
    const top = AXIS_HEIGHT - LANE_HEIGHT;
    for (let lane = 0; lane < lanes; lane++) {
      const y = AXIS_HEIGHT + layout.laneY(answer.laneTrack[lane] as number, answer.laneDepth[lane] as number) - scrollTop;
      if (y > top && y < height) {
        laneScreen[lane] = y;
        this.stats.lanes++;
      } else laneScreen[lane] = Number.NaN;
    }
    const scale = plotWidth(width) / (view.end_ps - view.start_ps);
    // x = relative * scale + offset, relative to the answer's start.
    const offset = GUTTER_WIDTH + (prepared.origin - view.start_ps) * scale;
    const left = GUTTER_WIDTH - 2;
    const right = width + 2;
    const boxHeight = LANE_HEIGHT - 1;

    if (prepared.striped) this.drawStrip(prepared, laneScreen, scale, offset, left, right, boxHeight);
    else this.drawRuns(prepared, laneScreen, scale, offset, left, right, boxHeight);

    // Events: one fillStyle per palette colour.
    const eventStart = answer.eventStart;
    const eventDuration = answer.eventDuration;
    const eventLane = prepared.eventLane;
    const order = prepared.colorOrder;
    const starts = prepared.colorStarts;
    let events = this.stats.events;
    let named = 0;
    for (let color = 0; color < PALETTE.length; color++) {
      const from = starts[color] as number;
      const to = starts[color + 1] as number;
      if (from === to) continue;
      ctx.fillStyle = PALETTE[color] as string;
      for (let at = from; at < to; at++) {
        const row = order[at] as number;
        const y = laneScreen[eventLane[row] as number] as number;
        if (y !== y) continue;
        const start = eventStart[row] as number;
        let x0 = start * scale + offset;
        let x1 = (start + (eventDuration[row] as number)) * scale + offset;
        if (x1 < left || x0 > right) continue;
        if (x0 < left) x0 = left;
        if (x1 > right) x1 = right;
        const w = x1 - x0;
        ctx.fillRect(x0, y, w < 1 ? 1 : w, boxHeight);
        events++;
        if (w >= NAME_MIN_PX) named++;
      }
    }
    this.stats.events = events;

    // Names, where a box is wide enough: a second pass over the same order.
    if (named > 0) {
      this.setFont(FONT);
      ctx.textBaseline = "middle";
      let textColor = "";
      for (let color = 0; color < PALETTE.length; color++) {
        const from = starts[color] as number;
        const to = starts[color + 1] as number;
        for (let at = from; at < to; at++) {
          const row = order[at] as number;
          const y = laneScreen[eventLane[row] as number] as number;
          if (y !== y) continue;
          const start = eventStart[row] as number;
          let x0 = start * scale + offset;
          let x1 = (start + (eventDuration[row] as number)) * scale + offset;
          if (x1 - x0 < NAME_MIN_PX || x1 < left || x0 > right) continue;
          if (x0 < GUTTER_WIDTH) x0 = GUTTER_WIDTH;
          if (x1 > width) x1 = width;
          const room = x1 - x0 - 6;
          if (room < 12) continue;
          const text = this.fitted(prepared.names[row] as string, room, row, this.clippedNames(prepared));
          if (!text) continue;
          const wanted = TEXT_ON[color] as string;
          if (wanted !== textColor) {
            ctx.fillStyle = wanted;
            textColor = wanted;
          }
          ctx.fillText(text, x0 + 3, y + LANE_HEIGHT / 2);
        }
      }
    }

    if (scene.selectedId !== null) {
      const row = prepared.rowOf(scene.selectedId);
      if (row >= 0) {
        const y = laneScreen[eventLane[row] as number] as number;
        if (y === y) {
          const start = eventStart[row] as number;
          const x0 = Math.max(left, start * scale + offset);
          const x1 = Math.min(right, (start + (eventDuration[row] as number)) * scale + offset);
          if (x1 >= left && x0 <= right) {
            ctx.lineWidth = 2;
            ctx.strokeStyle = COLORS.selection;
            ctx.strokeRect(x0 - 1, y - 1, Math.max(1, x1 - x0) + 2, boxHeight + 2);
          }
        }
      }
    }
  }

  /** The strip canvas of `prepared` (made on its first frame; the previous one freed). */
  private stripOf(prepared: Prepared): CanvasImageSource | null {
    if (this.stripFor === prepared) return this.strip;
    if (this.strip) {
      this.strip.width = 0;
      this.strip.height = 0;
    }
    this.strip = null;
    this.stripFor = prepared;
    const answer = prepared.answer;
    const width = Math.max(1, answer.header.width_px);
    const lanes = answer.laneTrack.length;
    if (lanes === 0) return null;
    const canvas = document.createElement("canvas");
    canvas.width = width;
    canvas.height = lanes;
    const context = canvas.getContext("2d");
    if (!context) return null;
    const pixels = prepared.stripPixels();
    context.putImageData(new ImageData(new Uint8ClampedArray(pixels.buffer, pixels.byteOffset, pixels.byteLength), width, lanes), 0, 0);
    this.strip = canvas;
    return canvas;
  }

  /**
   * Runs and narrow events: one drawImage per visible lane from the strip, scaled from the
   * answer's pixels to the view's (crisp when zoomed in past them, averaged when out).
   */
  private drawStrip(prepared: Prepared, laneScreen: Float64Array, scale: number, offset: number, left: number, right: number, boxHeight: number): void {
    const strip = this.stripOf(prepared);
    if (!strip) return;
    const ctx = this.ctx;
    const answer = prepared.answer;
    const width = Math.max(1, answer.header.width_px);
    const unit = answer.header.pixel_ps * scale; // screen px per answer px
    ctx.imageSmoothingEnabled = unit < 1;
    let events = 0;
    let runs = 0;
    for (let lane = 0; lane < answer.laneTrack.length; lane++) {
      const y = laneScreen[lane] as number;
      if (y !== y || !prepared.inStrip(lane)) continue;
      const from = Math.max(0, Math.floor((left - offset) / unit));
      const to = Math.min(width, Math.ceil((right - offset) / unit));
      if (to <= from) continue;
      ctx.drawImage(strip, from, lane, to - from, 1, offset + from * unit, y, (to - from) * unit, boxHeight);
      events += prepared.laneNarrow[lane] as number;
      runs += (answer.laneRuns[lane + 1] as number) - (answer.laneRuns[lane] as number);
    }
    this.stats.events = events;
    this.stats.runs = runs;
  }

  /** Runs box by box (answers too big for a strip): one colour, batched by opacity. */
  private drawRuns(prepared: Prepared, laneScreen: Float64Array, scale: number, offset: number, left: number, right: number, boxHeight: number): void {
    const ctx = this.ctx;
    const answer = prepared.answer;
    const runStart = answer.runStart;
    const runEnd = answer.runEnd;
    const runLane = prepared.runLane;
    const runOrder = prepared.runOrder;
    ctx.fillStyle = RUN_COLOR;
    let runs = 0;
    for (let step = 0; step < RUN_ALPHA_STEPS; step++) {
      const from = prepared.runStarts[step] as number;
      const to = prepared.runStarts[step + 1] as number;
      if (from === to) continue;
      ctx.globalAlpha = runAlpha(step);
      for (let at = from; at < to; at++) {
        const row = runOrder[at] as number;
        const y = laneScreen[runLane[row] as number] as number;
        if (y !== y) continue; // NaN: lane off screen
        let x0 = (runStart[row] as number) * scale + offset;
        let x1 = (runEnd[row] as number) * scale + offset;
        if (x1 < left || x0 > right) continue;
        if (x0 < left) x0 = left;
        if (x1 > right) x1 = right;
        ctx.fillRect(x0, y, x1 - x0 < 1 ? 1 : x1 - x0, boxHeight);
        runs++;
      }
    }
    ctx.globalAlpha = 1;
    this.stats.runs = runs;
  }

  private clippedNames(prepared: Prepared): Map<number, string> {
    if (this.clippedFor !== prepared) {
      this.clipped.clear();
      this.clippedFor = prepared;
    }
    return this.clipped;
  }

  private drawArea(scene: Scene, area: AreaMark): void {
    const ctx = this.ctx;
    const x0 = xOf(area.start_ps, scene.view, scene.width);
    const x1 = xOf(area.end_ps, scene.view, scene.width);
    const y0 = AXIS_HEIGHT + area.top - scene.scrollTop;
    const y1 = AXIS_HEIGHT + area.bottom - scene.scrollTop;
    ctx.fillStyle = COLORS.area;
    ctx.fillRect(x0, y0, Math.max(1, x1 - x0), y1 - y0);
    ctx.strokeStyle = COLORS.areaEdge;
    ctx.lineWidth = 1;
    ctx.strokeRect(x0 + 0.5, y0 + 0.5, Math.max(1, x1 - x0) - 1, y1 - y0 - 1);
  }

  /**
   * The critical path: a band in its kind's colour over the first lane of each segment's
   * track (its section header where collapsed), and a line where the path moves from one
   * track to another. Returns how many segments were drawn.
   */
  private drawPath(scene: Scene, path: PathOverlay): number {
    const ctx = this.ctx;
    const { layout, view, width, scrollTop } = scene;
    const left = GUTTER_WIDTH - 2;
    const right = width + 2;
    let drawn = 0;
    let previousY = Number.NaN;
    let previousX = Number.NaN;
    ctx.lineWidth = 2;
    for (const mark of path.marks) {
      if (mark.track < 0) continue;
      const lane = layout.laneY(mark.track, 0);
      const top = Number.isNaN(lane) ? layout.trackSectionY[mark.track] : lane;
      if (top === undefined || Number.isNaN(top)) continue;
      const height = Number.isNaN(lane) ? SECTION_HEIGHT : LANE_HEIGHT;
      const y = AXIS_HEIGHT + top - scrollTop;
      const x0 = xOf(mark.start_ps, view, width);
      const x1 = xOf(mark.end_ps, view, width);
      // Segments run latest first: this one ends where the previous one began.
      if (previousY === previousY && previousY !== y + height / 2 && x1 >= left && x1 <= right) {
        ctx.strokeStyle = COLORS.path;
        ctx.beginPath();
        ctx.moveTo(previousX, previousY);
        ctx.lineTo(x1, y + height / 2);
        ctx.stroke();
      }
      previousY = y + height / 2;
      previousX = Math.max(left, Math.min(right, x0));
      if (x1 < left || x0 > right) continue;
      const a = Math.max(left, x0);
      const w = Math.max(2, Math.min(right, x1) - a);
      ctx.globalAlpha = 0.35;
      ctx.fillStyle = mark.color;
      ctx.fillRect(a, y, w, height - 1);
      ctx.globalAlpha = 1;
      ctx.strokeStyle = mark.color;
      ctx.strokeRect(a + 1, y + 1, w - 2, height - 3);
      drawn++;
    }
    return drawn;
  }

  /** Screen point of a flow's end: `atEnd` takes the event's end, else its start. */
  private flowPoint(scene: Scene, end: FlowEnd, atEnd: boolean): [number, number] | null {
    if (end.track === undefined) return null;
    const y = scene.layout.anchorY(end.track, end.depth ?? 0);
    if (Number.isNaN(y)) return null;
    const t = atEnd ? end.start_ps + end.duration_ps : end.start_ps;
    return [xOf(t, scene.view, scene.width), AXIS_HEIGHT + y - scene.scrollTop];
  }

  private drawFlows(scene: Scene): void {
    const ctx = this.ctx;
    ctx.strokeStyle = COLORS.flow;
    ctx.fillStyle = COLORS.flow;
    ctx.lineWidth = 1.5;
    for (const flow of scene.flows) {
      const from = this.flowPoint(scene, flow.from, true);
      const to = this.flowPoint(scene, flow.to, false);
      if (!from || !to) continue;
      const [x0, y0] = from;
      const [x1, y1] = to;
      // Clamp far-away ends (a canvas path with 1e9 px coordinates draws nothing useful).
      const cx0 = Math.max(-1e5, Math.min(1e5, x0));
      const cx1 = Math.max(-1e5, Math.min(1e5, x1));
      const bend = Math.max(24, Math.min(120, Math.abs(cx1 - cx0) / 2));
      ctx.beginPath();
      ctx.moveTo(cx0, y0);
      ctx.bezierCurveTo(cx0 + bend, y0, cx1 - bend, y1, cx1, y1);
      ctx.stroke();
      ctx.beginPath();
      ctx.arc(cx0, y0, 2.5, 0, Math.PI * 2);
      ctx.fill();
      // Arrowhead at the destination, pointing right (the curve arrives horizontally).
      ctx.beginPath();
      ctx.moveTo(cx1, y1);
      ctx.lineTo(cx1 - 7, y1 - 4);
      ctx.lineTo(cx1 - 7, y1 + 4);
      ctx.closePath();
      ctx.fill();
    }
  }

  private drawAxis(scene: Scene, step: number): void {
    const ctx = this.ctx;
    const { view, width } = scene;
    ctx.fillStyle = COLORS.axis;
    ctx.fillRect(0, 0, width, AXIS_HEIGHT);
    ctx.fillStyle = COLORS.separator;
    ctx.fillRect(0, AXIS_HEIGHT - 1, width, 1);
    this.setFont(FONT);
    ctx.textBaseline = "middle";
    ctx.fillStyle = COLORS.muted;
    ctx.fillText(`view ${formatDuration(view.end_ps - view.start_ps)}`, 8, AXIS_HEIGHT / 2);
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER_WIDTH, 0, plotWidth(width), AXIS_HEIGHT);
    ctx.clip();
    ctx.fillStyle = COLORS.axisText;
    const first = this.firstTick(view.start_ps, step);
    for (let t = first; t <= view.end_ps; t += step) {
      const x = Math.round(xOf(t, view, width));
      ctx.fillRect(x, AXIS_HEIGHT - 7, 1, 7);
      ctx.fillText(tickLabel(t - this.axisOrigin_ps, step), x + 4, AXIS_HEIGHT / 2 - 2);
    }
    ctx.restore();
  }

  private drawTiming(scene: Scene, timing: TimeRange): void {
    const ctx = this.ctx;
    const { view, width, height } = scene;
    const a = xOf(Math.min(timing.start_ps, timing.end_ps), view, width);
    const b = xOf(Math.max(timing.start_ps, timing.end_ps), view, width);
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER_WIDTH, 0, plotWidth(width), height);
    ctx.clip();
    ctx.fillStyle = COLORS.timingBand;
    ctx.fillRect(a, AXIS_HEIGHT, Math.max(1, b - a), height - AXIS_HEIGHT);
    ctx.fillStyle = COLORS.timing;
    ctx.fillRect(Math.round(a), 0, 1, height);
    ctx.fillRect(Math.round(b), 0, 1, height);
    const text = formatDuration(Math.abs(timing.end_ps - timing.start_ps));
    this.setFont(BOLD_FONT);
    const textWidth = ctx.measureText(text).width + 12;
    const centre = Math.max(GUTTER_WIDTH + textWidth / 2, Math.min(width - textWidth / 2, (a + b) / 2));
    ctx.fillStyle = COLORS.timing;
    ctx.fillRect(centre - textWidth / 2, 3, textWidth, AXIS_HEIGHT - 6);
    ctx.fillStyle = "#ffffff";
    ctx.textBaseline = "middle";
    ctx.fillText(text, centre - textWidth / 2 + 6, AXIS_HEIGHT / 2);
    ctx.restore();
  }

  private drawScrollbar(scene: Scene): void {
    const view = scene.height - AXIS_HEIGHT;
    const total = scene.layout.height;
    if (total <= view) return;
    const ctx = this.ctx;
    const thumb = Math.max(24, (view * view) / total);
    const y = AXIS_HEIGHT + ((view - thumb) * scene.scrollTop) / (total - view);
    ctx.fillStyle = COLORS.scroll;
    ctx.fillRect(scene.width - SCROLLBAR_WIDTH + 2, y, SCROLLBAR_WIDTH - 3, thumb);
  }
}
