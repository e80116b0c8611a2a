import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import type { TracksInfo } from "../src/trace/api";
import { decodeAnswer } from "../src/trace/decode";
import { Layout } from "../src/trace/layout";
import { Prepared } from "../src/trace/model";
import { PALETTE } from "../src/trace/palette";
import { AXIS_HEIGHT, GUTTER_WIDTH, plotWidth, Renderer, timeAt, xOf, type Scene } from "../src/trace/render";
import { requestFor, tickLabel, tickStep } from "../src/trace/timeline";

const fixture = (name: string): string => new URL(`./fixtures/${name}`, import.meta.url).pathname;
const info = JSON.parse(readFileSync(fixture("trace_tracks_v100.json"), "utf8")) as TracksInfo;

function answer(name: string) {
  const bytes = readFileSync(fixture(name));
  const data = new ArrayBuffer(bytes.byteLength);
  new Uint8Array(data).set(bytes);
  return decodeAnswer(data);
}

/** A 2D context that records what a frame asks of it. */
class Recorder {
  calls: Record<string, number> = {};
  fillStyles: string[] = [];
  rects: [number, number, number, number][] = [];
  images: number[][] = [];
  texts: string[] = [];
  private style = "";
  strokeStyle = "";
  globalAlpha = 1;
  font = "";
  textBaseline = "";
  lineWidth = 1;
  imageSmoothingEnabled = true;
  get fillStyle(): string {
    return this.style;
  }
  set fillStyle(value: string) {
    this.style = value;
    this.fillStyles.push(value);
  }
  private count(name: string): void {
    this.calls[name] = (this.calls[name] ?? 0) + 1;
  }
  fillRect(x: number, y: number, w: number, h: number): void {
    this.count("fillRect");
    this.rects.push([x, y, w, h]);
  }
  drawImage(...args: unknown[]): void {
    this.count("drawImage");
    this.images.push(args.slice(1) as number[]);
  }
  fillText(text: string): void {
    this.count("fillText");
    this.texts.push(text);
  }
  measureText(text: string): { width: number } {
    this.count("measureText");
    return { width: text.length * 6 };
  }
}
for (const name of ["setTransform", "save", "restore", "beginPath", "rect", "clip", "strokeRect", "moveTo", "lineTo", "bezierCurveTo", "stroke", "arc", "fill", "closePath"]) {
  (Recorder.prototype as unknown as Record<string, () => void>)[name] = function (this: Recorder) {
    this.calls[name] = (this.calls[name] ?? 0) + 1;
  };
}

beforeAll(() => {
  const stub = { putImageData: () => undefined };
  (globalThis as Record<string, unknown>).document = { createElement: () => ({ width: 0, height: 0, getContext: () => stub }) };
  (globalThis as Record<string, unknown>).ImageData = class {
    constructor(
      readonly data: Uint8ClampedArray,
      readonly width: number,
      readonly height: number,
    ) {}
  };
});

describe("drawing a frame", () => {
  const full = answer("trace_query_v100_full.bin");
  const span = full.header.span_ps;
  const prepared = new Prepared(full, requestFor({ start_ps: 0, end_ps: span }, 160, span, [], true));
  const scene = (overrides: Partial<Scene> = {}): Scene => ({
    width: 1280,
    height: 800,
    dpr: 2,
    view: { start_ps: 0, end_ps: span },
    scrollTop: 0,
    layout: new Layout(info.sections, info.tracks, new Set()),
    prepared,
    selectedId: null,
    area: null,
    timing: null,
    flows: [],
    path: null,
    ...overrides,
  });

  it("draws every lane: runs and narrow events in one image per lane, wide events by colour", () => {
    const ctx = new Recorder();
    const renderer = new Renderer(ctx as unknown as CanvasRenderingContext2D);
    renderer.draw(scene());
    const lanes = full.laneTrack.length;
    expect(renderer.stats.lanes).toBe(lanes);
    expect(renderer.stats.runs).toBe(full.runStart.length);
    expect(renderer.stats.events).toBe(full.eventStart.length);
    const striped = Array.from({ length: lanes }, (_, lane) => prepared.inStrip(lane)).filter(Boolean).length;
    expect(ctx.calls.drawImage).toBe(striped);
    // One fillStyle per palette colour used, plus the frame's own (background, rows, axis).
    const paletteStyles = ctx.fillStyles.filter((style) => PALETTE.includes(style));
    expect(paletteStyles.length).toBeLessThanOrEqual(PALETTE.length);
    // Names only where they fit, and the Steps are wide enough to be named.
    expect(ctx.texts.some((text) => text.startsWith("Step 10"))).toBe(true);
  });

  it("draws the critical path's segments in the view, on their tracks, and nothing of it while it is off", () => {
    const [first, second] = info.tracks;
    // Two segments on two tracks in the first half of the profile, one on a track the
    // viewer lacks (not placed), latest first as the tool gives them.
    const marks = [
      { start_ps: span / 4, end_ps: span / 2, track: second!.id, color: "#123456" },
      { start_ps: span / 8, end_ps: span / 4, track: first!.id, color: "#fdd835" },
      { start_ps: 0, end_ps: span / 8, track: -1, color: "#bdbdbd" },
    ];
    const path = { index: 0, step: 1, marks };
    const on = new Renderer(new Recorder() as unknown as CanvasRenderingContext2D);
    on.draw(scene({ path }));
    expect(on.stats.pathMarks).toBe(2);
    // A view of the profile's last quarter holds none of them.
    on.draw(scene({ path, view: { start_ps: (span * 3) / 4, end_ps: span } }));
    expect(on.stats.pathMarks).toBe(0);
    const ctx = new Recorder();
    const off = new Renderer(ctx as unknown as CanvasRenderingContext2D);
    off.draw(scene());
    expect(off.stats.pathMarks).toBe(0);
    expect(ctx.fillStyles).not.toContain("#123456");
  });

  it("counts the axis from its origin (the paired view's step start)", () => {
    // A view of a tenth of the profile starting at an origin that is no multiple of a tick.
    const origin = Math.round(span / 3) + 7;
    const view = { start_ps: origin, end_ps: origin + span / 10 };
    const step = tickStep((span / 10) / plotWidth(1280));
    const ctx = new Recorder();
    new Renderer(ctx as unknown as CanvasRenderingContext2D, origin).draw(scene({ view }));
    // The ticks read 0, 1, 2 steps from the origin, and the first stands at the origin's x.
    for (const k of [0, 1, 2]) expect(ctx.texts).toContain(tickLabel(k * step, step));
    const ticks = ctx.rects.filter(([, y, w, h]) => w === 1 && h === 7 && y === AXIS_HEIGHT - 7);
    expect(ticks[0]?.[0]).toBe(Math.round(xOf(origin, view, 1280)));
    // Without an origin the same view's first tick is the first multiple of the step after it.
    const plain = new Recorder();
    new Renderer(plain as unknown as CanvasRenderingContext2D).draw(scene({ view }));
    expect(plain.texts).toContain(tickLabel(Math.ceil(origin / step) * step, step));
    expect(plain.texts).not.toContain(tickLabel(0, step));
  });

  it("leaves out what is off screen", () => {
    const ctx = new Recorder();
    const renderer = new Renderer(ctx as unknown as CanvasRenderingContext2D);
    // The first tenth of the profile: Steps start later, so fewer events; lanes stay.
    renderer.draw(scene({ view: { start_ps: 0, end_ps: span / 10 } }));
    expect(renderer.stats.events).toBeLessThan(full.eventStart.length);
    for (const [x, , w] of ctx.rects) expect(x + w).toBeGreaterThanOrEqual(0);
    // Scrolled past everything: no lanes.
    const past = new Renderer(new Recorder() as unknown as CanvasRenderingContext2D);
    past.draw(scene({ scrollTop: 10_000 }));
    expect(past.stats.lanes).toBe(0);
    expect(past.stats.events).toBe(0);
  });

  it("draws nothing of a collapsed section", () => {
    const renderer = new Renderer(new Recorder() as unknown as CanvasRenderingContext2D);
    const host = info.tracks.find((track) => track.section === "/host:CPU")!.section;
    renderer.draw(scene({ layout: new Layout(info.sections, info.tracks, new Set([host])) }));
    const hostLanes = Array.from(full.laneTrack).filter((track) => info.tracks[track]!.section === host).length;
    expect(renderer.stats.lanes).toBe(full.laneTrack.length - hostLanes);
    // Its header is still drawn, with every other section's, in the layout's order.
    expect(renderer.stats.sections).toEqual(info.sections);
    // Scrolled past everything: no header on screen.
    renderer.draw(scene({ scrollTop: 10_000 }));
    expect(renderer.stats.sections).toEqual([]);
  });

  it("maps time to x and back", () => {
    const view = { start_ps: 1000, end_ps: 1_001_000 };
    expect(xOf(1000, view, 1280)).toBe(GUTTER_WIDTH);
    expect(timeAt(xOf(123_456, view, 1280), view, 1280)).toBeCloseTo(123_456, 6);
    expect(AXIS_HEIGHT).toBeGreaterThan(0);
  });
});
