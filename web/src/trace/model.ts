/**
 * A query answer made ready to draw, once when it arrives (so frames allocate nothing):
 * each event's lane and colour, names per event, a (track, depth) -> lane map for hit tests,
 * and the split the renderer draws in two ways:
 *
 * - wide events (at least NARROW_PX of the answer's pixels) one by one, in palette order
 *   (one fillStyle per batch), with their names;
 * - everything narrower (merged runs, their opacity following the busy fraction, and
 *   narrow events in their colour) rasterised once into a "strip": one pixel row per lane,
 *   one column per answer pixel (`stripPixels`), which a frame draws with one scaled
 *   drawImage per lane. Tens of thousands of sub-pixel boxes cost a frame as much as a
 *   few dozen.
 */

import { eventName, type TraceAnswer } from "./decode";
import { colorIndex, PALETTE, RUN_ALPHA_STEPS, RUN_COLOR, runAlphaStep } from "./palette";
import type { QueryParams } from "./timeline";

const DEPTH_SPAN = 1 << 16;
/** Events narrower than this many answer pixels are drawn in the strip. */
export const NARROW_PX = 2;
/** Past this many strip pixels (lanes x width) runs and narrow events are drawn box by box. */
export const MAX_STRIP_PIXELS = 1 << 24;

/** "#rrggbb" with `alpha` (0..1) as one little-endian RGBA pixel of a Uint32Array. */
export function packColor(hex: string, alpha = 1): number {
  const r = parseInt(hex.slice(1, 3), 16);
  const g = parseInt(hex.slice(3, 5), 16);
  const b = parseInt(hex.slice(5, 7), 16);
  const a = Math.round(Math.min(1, Math.max(0, alpha)) * 255);
  return ((a << 24) | (b << 16) | (g << 8) | r) >>> 0;
}

const PACKED_PALETTE = PALETTE.map((hex) => packColor(hex));
/** Opacity of a run: never invisible, solid when fully busy. */
export function runOpacity(busy: number): number {
  return 0.25 + 0.75 * (busy > 0 ? Math.min(1, busy) : 0);
}

function laneKey(track: number, depth: number): number {
  return track * DEPTH_SPAN + depth;
}

/** Rows `0..count-1` bucketed by `bucketOf` (a counting sort): order and bucket starts. */
function bucketed(count: number, buckets: number, bucketOf: (row: number) => number): { order: Int32Array; starts: Int32Array; of: Uint8Array } {
  const of = new Uint8Array(count);
  const starts = new Int32Array(buckets + 1);
  for (let row = 0; row < count; row++) {
    const bucket = bucketOf(row);
    of[row] = bucket;
    (starts[bucket + 1] as number)++;
  }
  for (let bucket = 0; bucket < buckets; bucket++) starts[bucket + 1] = (starts[bucket + 1] as number) + (starts[bucket] as number);
  const next = starts.slice(0, buckets);
  const order = new Int32Array(count);
  for (let row = 0; row < count; row++) {
    const bucket = of[row] as number;
    order[next[bucket] as number] = row;
    next[bucket] = (next[bucket] as number) + 1;
  }
  return { order, starts, of };
}

const colorCache = new Map<string, number>();

function cachedColor(name: string): number {
  let color = colorCache.get(name);
  if (color === undefined) {
    if (colorCache.size > 50_000) colorCache.clear();
    color = colorIndex(name);
    colorCache.set(name, color);
  }
  return color;
}

export interface RunHit {
  kind: "run";
  row: number;
  lane: number;
  track: number;
  depth: number;
  start_ps: number;
  end_ps: number;
  count: number;
  busy: number;
}

export interface EventHit {
  kind: "event";
  row: number;
  lane: number;
  id: number;
  track: number;
  depth: number;
  start_ps: number;
  duration_ps: number;
  name: string;
}

export class Prepared {
  readonly answer: TraceAnswer;
  readonly params: QueryParams;
  /** Absolute start of the answer's times (ps from the profile start). */
  readonly origin: number;
  readonly eventLane: Int32Array;
  readonly runLane: Int32Array;
  readonly eventColor: Uint8Array;
  /** Wide events (drawn one by one) in palette order; colour c's are colorOrder[colorStarts[c]..colorStarts[c+1]). */
  readonly colorOrder: Int32Array;
  readonly colorStarts: Int32Array;
  /** Runs in opacity-step order (drawn box by box only when not striped). */
  readonly runOrder: Int32Array;
  readonly runStarts: Int32Array;
  /** Per lane: its narrow events (drawn in the strip). */
  readonly laneNarrow: Int32Array;
  readonly names: string[];
  /** Whether narrow events and runs go to the strip (false: too many lanes x pixels). */
  readonly striped: boolean;
  private readonly lanes = new Map<number, number>();

  constructor(answer: TraceAnswer, params: QueryParams) {
    this.answer = answer;
    this.params = params;
    this.origin = answer.header.start_ps;
    const lanes = answer.laneTrack.length;
    const events = answer.eventStart.length;
    const runs = answer.runStart.length;
    this.eventLane = new Int32Array(events);
    this.runLane = new Int32Array(runs);
    for (let lane = 0; lane < lanes; lane++) {
      this.lanes.set(laneKey(answer.laneTrack[lane] as number, answer.laneDepth[lane] as number), lane);
      this.eventLane.fill(lane, answer.laneEvents[lane], answer.laneEvents[lane + 1]);
      this.runLane.fill(lane, answer.laneRuns[lane], answer.laneRuns[lane + 1]);
    }
    this.names = new Array<string>(events);
    for (let row = 0; row < events; row++) this.names[row] = eventName(answer, row);
    this.striped = lanes * Math.max(1, answer.header.width_px) <= MAX_STRIP_PIXELS;
    const narrow = this.striped ? NARROW_PX * answer.header.pixel_ps : 0;
    const palette = PALETTE.length;
    // Bucket NARROW events past the palette: they are not drawn box by box.
    const colors = bucketed(events, palette + 1, (row) => {
      const color = cachedColor(this.names[row] as string);
      return (answer.eventDuration[row] as number) < narrow ? palette : color;
    });
    this.eventColor = new Uint8Array(events);
    for (let row = 0; row < events; row++) this.eventColor[row] = cachedColor(this.names[row] as string);
    this.colorOrder = colors.order;
    this.colorStarts = colors.starts;
    const alphas = bucketed(runs, RUN_ALPHA_STEPS, (row) => runAlphaStep(answer.runBusy[row] as number));
    this.runOrder = alphas.order;
    this.runStarts = alphas.starts;
    this.laneNarrow = new Int32Array(lanes);
    for (let row = 0; row < events; row++) {
      if ((answer.eventDuration[row] as number) < narrow) (this.laneNarrow[this.eventLane[row] as number] as number)++;
    }
  }

  /** Whether lane `lane` has anything in the strip. */
  inStrip(lane: number): boolean {
    const answer = this.answer;
    return (this.laneNarrow[lane] as number) > 0 || (answer.laneRuns[lane + 1] as number) > (answer.laneRuns[lane] as number);
  }

  /**
   * The strip's pixels: row `lane`, column `k` covers [k, k+1) x pixel_ps from the answer's
   * start; runs in RUN_COLOR at their opacity (the densest run wins a pixel), narrow events
   * opaque in their colour over them. Little-endian RGBA, for an ImageData.
   */
  stripPixels(): Uint32Array<ArrayBuffer> {
    const answer = this.answer;
    const width = Math.max(1, answer.header.width_px);
    const lanes = answer.laneTrack.length;
    const pixels = new Uint32Array(width * lanes);
    const pixel = answer.header.pixel_ps;
    const narrow = NARROW_PX * pixel;
    const alphaOf = new Uint32Array(256);
    const base = packColor(RUN_COLOR, 0) & 0x00ffffff;
    for (let lane = 0; lane < lanes; lane++) {
      const row0 = lane * width;
      for (let run = answer.laneRuns[lane] as number; run < (answer.laneRuns[lane + 1] as number); run++) {
        const alpha = Math.round(runOpacity(answer.runBusy[run] as number) * 255);
        let from = Math.floor((answer.runStart[run] as number) / pixel);
        let to = Math.ceil((answer.runEnd[run] as number) / pixel);
        if (to <= from) to = from + 1;
        if (from < 0) from = 0;
        if (to > width) to = width;
        const value = (alphaOf[alpha] ||= ((alpha << 24) | base) >>> 0);
        for (let k = from; k < to; k++) {
          if ((pixels[row0 + k] as number) >>> 24 < alpha) pixels[row0 + k] = value;
        }
      }
      for (let row = answer.laneEvents[lane] as number; row < (answer.laneEvents[lane + 1] as number); row++) {
        const duration = answer.eventDuration[row] as number;
        if (duration >= narrow) continue;
        const start = answer.eventStart[row] as number;
        let from = Math.floor(start / pixel);
        let to = Math.ceil((start + duration) / pixel);
        if (to <= from) to = from + 1;
        if (from < 0) from = 0;
        if (to > width) to = width;
        pixels.fill(PACKED_PALETTE[this.eventColor[row] as number] as number, row0 + from, row0 + to);
      }
    }
    return pixels;
  }

  get eventCount(): number {
    return this.answer.eventStart.length;
  }

  get runCount(): number {
    return this.answer.runStart.length;
  }

  laneOf(track: number, depth: number): number {
    return this.lanes.get(laneKey(track, depth)) ?? -1;
  }

  /** The answer's row of index event `id`, or -1. */
  rowOf(id: number): number {
    const ids = this.answer.eventId;
    for (let row = 0; row < ids.length; row++) if (ids[row] === id) return row;
    return -1;
  }

  eventHit(row: number): EventHit {
    const answer = this.answer;
    const lane = this.eventLane[row] as number;
    return {
      kind: "event",
      row,
      lane,
      id: answer.eventId[row] as number,
      track: answer.laneTrack[lane] as number,
      depth: answer.laneDepth[lane] as number,
      start_ps: this.origin + (answer.eventStart[row] as number),
      duration_ps: answer.eventDuration[row] as number,
      name: this.names[row] as string,
    };
  }

  runHit(row: number): RunHit {
    const answer = this.answer;
    const lane = this.runLane[row] as number;
    return {
      kind: "run",
      row,
      lane,
      track: answer.laneTrack[lane] as number,
      depth: answer.laneDepth[lane] as number,
      start_ps: this.origin + (answer.runStart[row] as number),
      end_ps: this.origin + (answer.runEnd[row] as number),
      count: answer.runCount[row] as number,
      busy: answer.runBusy[row] as number,
    };
  }

  /**
   * The event (else the run) of lane (track, depth) under absolute time `t_ps`, within
   * `slop_ps` of its edges (boxes are drawn at least a pixel wide); the closest one wins.
   */
  hit(track: number, depth: number, t_ps: number, slop_ps: number): EventHit | RunHit | null {
    const lane = this.laneOf(track, depth);
    if (lane < 0) return null;
    const answer = this.answer;
    const t = t_ps - this.origin;
    const event = nearest(answer.eventStart, answer.eventDuration, null, answer.laneEvents[lane] as number, answer.laneEvents[lane + 1] as number, t, slop_ps);
    if (event >= 0) return this.eventHit(event);
    const run = nearest(answer.runStart, null, answer.runEnd, answer.laneRuns[lane] as number, answer.laneRuns[lane + 1] as number, t, slop_ps);
    return run >= 0 ? this.runHit(run) : null;
  }
}

/**
 * In rows lo..hi-1 (sorted by start, not overlapping), the one containing t (within slop),
 * preferring a box that contains t exactly over one merely near it; -1 if none.
 */
function nearest(
  starts: Float64Array | Float32Array,
  durations: Float64Array | null,
  ends: Float32Array | null,
  lo: number,
  hi: number,
  t: number,
  slop: number,
): number {
  // The last row starting at or before t + slop.
  let a = lo;
  let b = hi;
  while (a < b) {
    const mid = (a + b) >> 1;
    if ((starts[mid] as number) <= t + slop) a = mid + 1;
    else b = mid;
  }
  let best = -1;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (let row = a - 1; row >= lo && row >= a - 3; row--) {
    const start = starts[row] as number;
    const end = durations ? start + (durations[row] as number) : (ends as Float32Array)[row] as number;
    const distance = t < start ? start - t : t > end ? t - end : 0;
    if (distance <= slop && distance < bestDistance) {
      best = row;
      bestDistance = distance;
      if (distance === 0) break;
    }
  }
  return best;
}
