import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { TracksInfo } from "../src/trace/api";
import { decodeAnswer } from "../src/trace/decode";
import { LANE_HEIGHT } from "../src/trace/layout";
import { Prepared } from "../src/trace/model";
import { AXIS_HEIGHT, GUTTER_WIDTH, SCROLLBAR_WIDTH } from "../src/trace/render";
import { MIN_VIEW_PS, requestFor } from "../src/trace/timeline";
import { parseCollapsed, storageKey } from "../src/trace/collapsed";
import { ViewState } from "../src/trace/view_state";

const fixture = (name: string): string => new URL(`./fixtures/${name}`, import.meta.url).pathname;
const info = JSON.parse(readFileSync(fixture("trace_tracks_v100.json"), "utf8")) as TracksInfo;
const SPAN = info.span_ps;

function answer(name: string) {
  const bytes = readFileSync(fixture(name));
  const data = new ArrayBuffer(bytes.byteLength);
  new Uint8Array(data).set(bytes);
  return decodeAnswer(data);
}

/** A state sized like a canvas `width` x `height` CSS px. */
function sized(width = 1232, height = 600, view: { start_ps: number; end_ps: number } | null = null): ViewState {
  const state = new ViewState(info, view);
  state.resize(width, height, 1);
  return state;
}

const firstSection = (state: ViewState): string => state.layout.sections[0] as string;

describe("the view state's range and scroll", () => {
  it("opens on the whole profile unless given a view", () => {
    expect(new ViewState(info).view).toEqual({ start_ps: 0, end_ps: SPAN });
    expect(new ViewState(info, { start_ps: 5, end_ps: 50_000 }).view).toEqual({ start_ps: 5, end_ps: 50_000 });
    expect(new ViewState({ ...info, span_ps: 0 }).span).toBe(1);
  });

  it("moves the view inside the profile and says whether it moved", () => {
    const state = sized();
    expect(state.setView({ start_ps: -1e9, end_ps: 1e9 })).toBe(true);
    expect(state.view).toEqual({ start_ps: 0, end_ps: 2e9 });
    expect(state.setView({ start_ps: 0, end_ps: 2e9 })).toBe(false);
    expect(state.setView({ start_ps: 10, end_ps: 11 })).toBe(true);
    expect(state.view.end_ps - state.view.start_ps).toBe(MIN_VIEW_PS);
    expect(state.setView(state.wholeProfile())).toBe(true);
    expect(state.view).toEqual({ start_ps: 0, end_ps: SPAN });
  });

  it("maps pixels to time over the plot, right of the track names", () => {
    const state = sized(1232);
    expect(state.plotWidth()).toBe(1232 - GUTTER_WIDTH - SCROLLBAR_WIDTH);
    expect(state.timeAt(GUTTER_WIDTH)).toBe(0);
    expect(state.timeAt(GUTTER_WIDTH + state.plotWidth())).toBe(SPAN);
    expect(state.xOf(SPAN / 2)).toBe(GUTTER_WIDTH + state.plotWidth() / 2);
    expect(state.psPerPx()).toBe(SPAN / state.plotWidth());
    expect(state.plotHeight()).toBe(600 - AXIS_HEIGHT);
  });

  it("zooms around the pointer over the plot, else the middle", () => {
    const state = sized(1232);
    expect(state.anchor()).toBe(0.5);
    state.pointer = { x: GUTTER_WIDTH + state.plotWidth() / 4, y: 100, inside: true };
    expect(state.anchor()).toBe(0.25);
    state.pointer = { x: 100, y: 100, inside: true };
    expect(state.anchor()).toBe(0.5);
    state.pointer = { x: 5000, y: 100, inside: true };
    expect(state.anchor()).toBe(1);
    state.pointer.inside = false;
    expect(state.anchor()).toBe(0.5);
  });

  it("says when the canvas changed size, and keeps the scroll inside the tracks", () => {
    const state = sized(1232, 200);
    expect(state.resize(1232, 200, 1)).toBe(false);
    expect(state.resize(1232, 200, 2)).toBe(true);
    const most = state.layout.height - state.plotHeight();
    expect(most).toBeGreaterThan(0);
    expect(state.scrollBy(-10)).toBe(false);
    expect(state.scrollBy(50)).toBe(true);
    expect(state.scrollTop).toBe(50);
    expect(state.scrollBy(1e9)).toBe(true);
    expect(state.scrollTop).toBe(most);
    state.scrollTo(-5);
    expect(state.scrollTop).toBe(0);
    state.scrollTo(most);
    // Taller: less to scroll.
    state.resize(1232, 400, 2);
    expect(state.scrollTop).toBe(state.layout.height - state.plotHeight());
  });

  it("collapses and expands sections, and reveals a lane by expanding and scrolling", () => {
    const state = sized(1232, 200);
    const full = state.layout.height;
    const track = info.tracks.find((candidate) => candidate.max_depth > 2 && candidate.section !== firstSection(state))!;
    state.toggleSection(track.section);
    expect(state.collapsed.has(track.section)).toBe(true);
    expect(state.layout.height).toBeLessThan(full);
    expect(Number.isNaN(state.layout.laneY(track.id, 2))).toBe(true);
    expect(state.reveal(track.id, 2)).toBe(true);
    expect(state.collapsed.has(track.section)).toBe(false);
    const y = state.layout.laneY(track.id, 2);
    expect(y).toBeGreaterThanOrEqual(state.scrollTop);
    expect(y + LANE_HEIGHT).toBeLessThanOrEqual(state.scrollTop + state.plotHeight());
    // Already on screen: nothing to do.
    expect(state.reveal(track.id, 2)).toBe(false);
    expect(state.reveal(99_999, 0)).toBe(false);
  });

  it("frames the selected event with a tenth of its length each side", () => {
    const state = sized();
    expect(state.framing()).toBeNull();
    state.select({ id: 1, name: "a", start_ps: 1000, duration_ps: 500, track: 0, depth: 0 });
    expect(state.framing()).toEqual({ start_ps: 950, end_ps: 1550 });
    state.select({ id: 2, name: "b", start_ps: 1000, duration_ps: 0, track: 0, depth: 0 });
    expect(state.framing()).toEqual({ start_ps: 999, end_ps: 1001 });
    const centred = state.centredOn(1e9, 2e6);
    expect((centred.start_ps + centred.end_ps) / 2).toBe(1e9 + 1e6);
  });
});

describe("collapsed sections kept across reloads", () => {
  it("starts with the stored sections collapsed, ignoring names the profile lacks", () => {
    const name = info.sections[1]!;
    const state = new ViewState(info, null, [name, "/device:NOPE:9"]);
    expect([...state.collapsed]).toEqual([name]);
    const header = state.layout.rows.find((row) => row.kind === "section" && row.name === name);
    expect(header?.kind === "section" && header.collapsed).toBe(true);
  });
  it("reads only a list of names from storage", () => {
    expect(parseCollapsed('["/host:CPU", 3, "/device:GPU:0"]')).toEqual(["/host:CPU", "/device:GPU:0"]);
    expect(parseCollapsed("not json")).toEqual([]);
    expect(parseCollapsed('{"a": 1}')).toEqual([]);
    expect(parseCollapsed(null)).toEqual([]);
    expect(storageKey({ run: "r", host: "h" })).not.toBe(storageKey({ run: "r", host: "h2" }));
  });
});

describe("the view state's marks", () => {
  it("exports the dragged range when there is one, else the view", () => {
    const state = sized();
    expect(state.exportRange()).toEqual(state.view);
    state.area = { start_ps: 10.4, end_ps: 20.6, top: 0, bottom: 5 };
    expect(state.exportRange()).toEqual({ start_ps: 10, end_ps: 21 }); // whole picoseconds covering it
    state.area = null;
    expect(state.exportRange()).toEqual(state.view);
  });
  it("selecting an event drops the dragged range and the old flows; Esc clears timing, then range, then event", () => {
    const state = sized();
    state.area = { start_ps: 0, end_ps: 10, top: 0, bottom: 5 };
    state.flows = [{} as never];
    state.select(null);
    expect(state.area).not.toBeNull();
    expect(state.flows).toEqual([]);
    state.select({ id: 3, name: "x", start_ps: 0, duration_ps: 1, track: 0, depth: 0 });
    expect(state.area).toBeNull();
    expect(state.nextToClear()).toBe("selection");
    state.area = { start_ps: 0, end_ps: 10, top: 0, bottom: 5 };
    expect(state.nextToClear()).toBe("area");
    state.timing = { start_ps: 0, end_ps: 10 };
    expect(state.nextToClear()).toBe("timing");
    expect(sized().nextToClear()).toBeNull();
  });

  it("says whether the name filter changed", () => {
    const state = sized();
    expect(state.setFilter("")).toBe(false);
    expect(state.setFilter("conv")).toBe(true);
    expect(state.setFilter("conv")).toBe(false);
    expect(state.filter).toBe("conv");
  });

  it("summarizes a dragged range over the tracks it covers, in whole picoseconds", () => {
    const state = sized();
    const all = state.summaryAsk({ start_ps: 10.5, end_ps: 99.2, top: 0, bottom: state.layout.height });
    expect(all).toEqual({ kind: "ask", range: { start_ps: 10, end_ps: 100 }, tracks: null });
    const y = state.layout.laneY(info.tracks[1]!.id, 0);
    const one = state.summaryAsk({ start_ps: 0, end_ps: 0.2, top: y + 1, bottom: y + 2 });
    expect(one).toEqual({ kind: "ask", range: { start_ps: 0, end_ps: 1 }, tracks: [info.tracks[1]!.id] });
    expect(state.summaryAsk({ start_ps: 1, end_ps: 2, top: -50, bottom: -10 })).toEqual({ kind: "empty", range: { start_ps: 1, end_ps: 2 } });
  });

  it("names tracks by section and name", () => {
    const state = sized();
    const track = info.tracks[2]!;
    expect(state.trackName(track.id)).toBe(`${track.section} › ${track.name}`);
    expect(state.trackName(99_999)).toBe("track 99999");
  });
});

describe("what the view state asks the server for", () => {
  it("asks for the view with overscan, the visible tracks and a screen more, until an answer covers it", () => {
    const state = sized(1232, 200);
    const need = state.dataNeed(null);
    expect(need.kind).toBe("query");
    if (need.kind !== "query") return;
    const tracks = state.visibleTracks(1);
    expect(need.params).toEqual(requestFor(state.view, state.plotWidth(), state.span, tracks, state.layout.isEverything(tracks), ""));
    expect(state.visibleTracks(0).length).toBeLessThanOrEqual(tracks.length);
    expect(state.dataNeed(need.params)).toEqual({ kind: "covered" });
    // Zoomed in a lot: the old answer is too coarse.
    state.setView({ start_ps: SPAN / 2, end_ps: SPAN / 2 + SPAN / 100 });
    expect(state.dataNeed(need.params).kind).toBe("query");
    // A new filter needs a new answer.
    state.setView(state.wholeProfile());
    state.setFilter("conv");
    const filtered = state.dataNeed(need.params);
    expect(filtered.kind === "query" && filtered.params.filter).toBe("conv");
  });

  it("asks for nothing when every section near the screen is collapsed", () => {
    const state = sized();
    for (const name of state.layout.sections) state.toggleSection(name);
    expect(state.dataNeed(null)).toEqual({ kind: "nothing" });
  });
});

describe("hit tests and hover against a drawn answer", () => {
  const full = answer("trace_query_v100_full.bin");
  const span = full.header.span_ps;
  // The fixture was asked 160 px wide over the whole profile: draw it that wide.
  const width = 160 + GUTTER_WIDTH + SCROLLBAR_WIDTH;
  const prepared = new Prepared(full, requestFor({ start_ps: 0, end_ps: span }, 160, span, [], true));
  /** The longest event on a lane of the first screen. */
  function longest(state: ViewState): number {
    let best = -1;
    for (let row = 0; row < prepared.eventCount; row++) {
      const hit = prepared.eventHit(row);
      const y = state.layout.laneY(hit.track, hit.depth);
      if (Number.isNaN(y) || y + LANE_HEIGHT > state.plotHeight()) continue;
      if (best < 0 || hit.duration_ps > prepared.eventHit(best).duration_ps) best = row;
    }
    return best;
  }

  it("finds an event where eventAt says it is drawn", () => {
    const state = sized(width, 900);
    const row = longest(state);
    expect(row).toBeGreaterThanOrEqual(0);
    const event = prepared.eventHit(row);
    const at = state.eventAt(event.id, prepared)!;
    expect(at).not.toBeNull();
    expect(at.y).toBe(AXIS_HEIGHT + state.layout.laneY(event.track, event.depth) + LANE_HEIGHT / 2);
    expect(state.hitAt(at.x, at.y, prepared)).toMatchObject({ kind: "event", id: event.id });
    expect(state.hitAt(at.x, at.y, null)).toBeNull();
    expect(state.hitAt(GUTTER_WIDTH - 1, at.y, prepared)).toBeNull();
    expect(state.hitAt(at.x, AXIS_HEIGHT - 1, prepared)).toBeNull();
    expect(state.eventAt(-12345, prepared)).toBeNull();
    // Scrolled off screen: nowhere.
    state.resize(width, 60, 1);
    state.scrollTo(1e9);
    if (state.scrollTop > state.layout.laneY(event.track, event.depth) + LANE_HEIGHT) expect(state.eventAt(event.id, prepared)).toBeNull();
  });

  it("shows the cursor and the tooltip for what is under the pointer", () => {
    const state = sized(width, 900);
    const event = prepared.eventHit(longest(state));
    const at = state.eventAt(event.id, prepared)!;
    state.pointer = { ...at, inside: true };
    const over = state.hover(prepared, false);
    expect(over.cursor).toBe("pointer");
    expect(over.hit).toMatchObject({ kind: "event", id: event.id });
    expect(over.left).toBe(Math.max(0, Math.min(at.x + 14, width - 260)));
    expect(over.top).toBe(at.y + 18);
    // Dragging or outside: no tooltip.
    expect(state.hover(prepared, true).hit).toBeNull();
    state.pointer.inside = false;
    expect(state.hover(prepared, false).hit).toBeNull();
    // The axis grabs; a section header is a button; the timing tool measures.
    state.pointer = { x: GUTTER_WIDTH + 5, y: 5, inside: true };
    expect(state.hover(prepared, false).cursor).toBe("grab");
    state.pointer = { x: GUTTER_WIDTH + 5, y: AXIS_HEIGHT + 2, inside: true };
    expect(state.layout.hit(2)?.kind).toBe("section");
    expect(state.hover(prepared, false).cursor).toBe("pointer");
    state.pointer = { x: 10, y: 5, inside: true };
    expect(state.hover(prepared, false).cursor).toBe("default");
    state.tool = "timing";
    state.pointer = { x: GUTTER_WIDTH + 5, y: 5000, inside: true };
    const low = state.hover(prepared, false);
    expect(low.cursor).toBe("col-resize");
    // Near the bottom the tooltip goes above the pointer.
    expect(low.top).toBe(5000 - 44);
  });

  it("hands the renderer the whole scene", () => {
    const state = sized(width, 900);
    state.select({ id: 7, name: "x", start_ps: 0, duration_ps: 1, track: 0, depth: 0 });
    state.timing = { start_ps: 1, end_ps: 2 };
    const scene = state.scene(prepared);
    expect(scene).toMatchObject({ width, height: 900, dpr: 1, view: state.view, scrollTop: 0, prepared, selectedId: 7, area: null, timing: { start_ps: 1, end_ps: 2 } });
    expect(scene.layout).toBe(state.layout);
    expect(sized().scene(null).selectedId).toBeNull();
  });
});
