/**
 * The trace viewer's time arithmetic, free of the DOM: the visible range (picoseconds from
 * the profile's time 0, as numbers: exact below 2**53 ps, 2.5 hours), zooming around a
 * point, panning, clamping to the profile, axis ticks, duration text, and which query
 * answers a view needs.
 */

export interface TimeRange {
  start_ps: number;
  end_ps: number;
}

/** The shortest range a view may show (a few ps per pixel is as deep as profiles resolve). */
export const MIN_VIEW_PS = 1000;
/** The server caps a query's width at this many pixels. */
export const MAX_WIDTH_PX = 16384;

export function viewLength(view: TimeRange): number {
  return view.end_ps - view.start_ps;
}

/** The whole profile (at least one ps wide, so arithmetic never divides by zero). */
export function wholeProfile(span_ps: number): TimeRange {
  return { start_ps: 0, end_ps: Math.max(1, span_ps) };
}

/**
 * `view` moved and resized into [0, span]: no longer than the profile, no shorter than
 * MIN_VIEW_PS (or the profile), keeping its length when it only slides past an edge.
 */
export function clampView(view: TimeRange, span_ps: number): TimeRange {
  const span = Math.max(1, span_ps);
  let length = viewLength(view);
  if (!Number.isFinite(length) || length <= 0) length = span;
  length = Math.min(span, Math.max(Math.min(MIN_VIEW_PS, span), length));
  let start = Number.isFinite(view.start_ps) ? view.start_ps : 0;
  start = Math.min(Math.max(0, start), span - length);
  return { start_ps: start, end_ps: start + length };
}

/**
 * Zooms by `factor` (< 1 zooms in) keeping the time under `anchor` (0..1 across the view)
 * where it is.
 */
export function zoomAt(view: TimeRange, factor: number, anchor: number, span_ps: number): TimeRange {
  const length = viewLength(view);
  const at = view.start_ps + length * anchor;
  const span = Math.max(1, span_ps);
  const next = Math.min(span, Math.max(Math.min(MIN_VIEW_PS, span), length * factor));
  return clampView({ start_ps: at - next * anchor, end_ps: at - next * anchor + next }, span_ps);
}

/** Slides the view by `delta_ps` (positive: later), stopping at the profile's edges. */
export function panBy(view: TimeRange, delta_ps: number, span_ps: number): TimeRange {
  return clampView({ start_ps: view.start_ps + delta_ps, end_ps: view.end_ps + delta_ps }, span_ps);
}

/**
 * A view centred on [start, start + duration) at the current zoom, zooming out when the
 * event is wider than most of the view, and in when it would be narrower than `minPx`
 * pixels of `widthPx`.
 */
export function centreOn(view: TimeRange, start_ps: number, duration_ps: number, span_ps: number, widthPx: number, minPx = 10): TimeRange {
  let length = viewLength(view);
  if (duration_ps > length * 0.8) length = duration_ps / 0.6;
  else if (duration_ps > 0 && (duration_ps * widthPx) / length < minPx) length = (duration_ps * widthPx) / minPx;
  const centre = start_ps + duration_ps / 2;
  return clampView({ start_ps: centre - length / 2, end_ps: centre + length / 2 }, span_ps);
}

/** Parses `start_ps`/`end_ps` from an address; null when absent or not a forward range. */
export function rangeFromSearch(search: string, span_ps: number): TimeRange | null {
  const params = new URLSearchParams(search);
  const start = params.get("start_ps");
  const end = params.get("end_ps");
  if (start === null || end === null || !/^\d+$/.test(start) || !/^\d+$/.test(end)) return null;
  const range = { start_ps: Number(start), end_ps: Number(end) };
  if (!(range.end_ps > range.start_ps)) return null;
  return clampView(range, span_ps);
}

// ---------------------------------------------------------------- axis and text

const UNITS: [number, string][] = [
  [1e12, "s"],
  [1e9, "ms"],
  [1e6, "µs"],
  [1e3, "ns"],
  [1, "ps"],
];

/** The smallest 1/2/5 x 10^k ps step that leaves at least `minPx` between ticks. */
export function tickStep(psPerPx: number, minPx = 90): number {
  const wanted = Math.max(1, psPerPx * minPx);
  const power = 10 ** Math.floor(Math.log10(wanted));
  for (const mantissa of [1, 2, 5, 10]) {
    if (mantissa * power >= wanted) return mantissa * power;
  }
  return 10 * power;
}

function unitFor(ps: number): [number, string] {
  const magnitude = Math.abs(ps);
  for (const unit of UNITS) if (magnitude >= unit[0]) return unit;
  return [1, "ps"];
}

/**
 * An axis label for time `t_ps` with ticks every `step_ps`: in the unit of the time (or of
 * the step, at 0), as many decimals as the step needs, going down a unit rather than
 * writing more than three.
 */
export function tickLabel(t_ps: number, step_ps: number): string {
  const start = UNITS.findIndex((unit) => unit[0] <= Math.max(Math.abs(t_ps), step_ps));
  for (let at = start < 0 ? UNITS.length - 1 : start; at < UNITS.length; at++) {
    const [scale, unit] = UNITS[at] as [number, string];
    const decimals = Math.max(0, Math.ceil(-Math.log10(step_ps / scale) - 1e-9));
    if (decimals <= 3 || at === UNITS.length - 1) return `${fixed(t_ps / scale, decimals)} ${unit}`;
  }
  return `${t_ps} ps`;
}

function fixed(value: number, decimals: number): string {
  const text = value.toFixed(decimals);
  return /^-0(\.0*)?$/.test(text) ? text.slice(1) : text;
}

/** A duration with three significant digits in a fitting unit: "1.23 ms", "870 ns". */
export function formatDuration(ps: number): string {
  if (!Number.isFinite(ps)) return "–";
  if (ps === 0) return "0 s";
  const [scale, unit] = unitFor(ps);
  const value = ps / scale;
  const digits = Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2;
  return `${value.toFixed(digits)} ${unit}`;
}

/** A time from the profile start in milliseconds, to the nanosecond: "95.341768 ms". */
export function formatStartMs(ps: number): string {
  return `${(ps / 1e9).toFixed(6)} ms`;
}

// ---------------------------------------------------------------- what to ask the server

export interface QueryParams {
  start_ps: number;
  end_ps: number;
  width_px: number;
  /** Track ids, ascending; every track when `all`. */
  tracks: number[];
  all: boolean;
  /** Only events whose name contains this (case-insensitive); "" for all. */
  filter: string;
}

/** How much range a request asks for beyond the view on each side (of its length). */
export const OVERSCAN = 0.5;

/**
 * The request for a view `widthPx` wide: the view plus OVERSCAN on each side (so panning
 * draws from the answer at once), clamped to the profile, at the view's pixel density.
 */
export function requestFor(view: TimeRange, widthPx: number, span_ps: number, tracks: number[], all: boolean, filter = ""): QueryParams {
  const length = viewLength(view);
  const span = Math.max(1, span_ps);
  const start = Math.max(0, Math.floor(view.start_ps - length * OVERSCAN));
  const end = Math.min(span, Math.ceil(view.end_ps + length * OVERSCAN));
  const pixels = Math.max(1, Math.round(((end - start) / Math.max(1, length)) * Math.max(1, widthPx)));
  return { start_ps: start, end_ps: Math.max(end, start + 1), width_px: Math.min(MAX_WIDTH_PX, pixels), tracks, all, filter };
}

/** Whether `sorted` (ascending) holds every id of `wanted` (ascending). */
export function holdsAll(sorted: readonly number[], wanted: readonly number[]): boolean {
  let at = 0;
  for (const id of wanted) {
    while (at < sorted.length && (sorted[at] as number) < id) at++;
    if (at >= sorted.length || sorted[at] !== id) return false;
  }
  return true;
}

/**
 * Whether an answer asked with `had` still serves a view: same name filter, it spans the view and `margin` of
 * its length on each side (so the next request leaves before panning reaches the edge), was asked at
 * about the view's pixel density (within `tolerance` either way; always, when it was
 * capped at MAX_WIDTH_PX and the view is deeper still it is not), and holds the visible
 * tracks.
 */
export function covers(
  had: QueryParams,
  view: TimeRange,
  widthPx: number,
  span_ps: number,
  visible: readonly number[],
  filter = "",
  tolerance = 1.4,
  margin = 0.15,
): boolean {
  if (had.filter !== filter) return false;
  const length = viewLength(view);
  const from = Math.max(0, view.start_ps - length * margin);
  const to = Math.min(Math.max(1, span_ps), view.end_ps + length * margin);
  if (had.start_ps > from || had.end_ps < to) return false;
  const hadDensity = (had.end_ps - had.start_ps) / had.width_px;
  const wantDensity = length / Math.max(1, widthPx);
  if (hadDensity > wantDensity * tolerance || hadDensity < wantDensity / tolerance) return false;
  return had.all || holdsAll(had.tracks, visible);
}

export function sameParams(a: QueryParams | null, b: QueryParams | null): boolean {
  if (!a || !b) return a === b;
  if (a.start_ps !== b.start_ps || a.end_ps !== b.end_ps || a.width_px !== b.width_px || a.all !== b.all || a.filter !== b.filter) return false;
  if (a.all) return true;
  return a.tracks.length === b.tracks.length && a.tracks.every((id, at) => id === b.tracks[at]);
}
