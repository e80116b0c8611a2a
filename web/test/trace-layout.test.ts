import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { TracksInfo } from "../src/trace/api";
import { LANE_HEIGHT, Layout, SECTION_HEIGHT, TRACK_GAP } from "../src/trace/layout";
import { NARROW_PX, packColor, Prepared, runOpacity } from "../src/trace/model";
import { decodeAnswer } from "../src/trace/decode";
import { colorIndex, hashName, luminance, PALETTE, RUN_ALPHA_STEPS, runAlpha, runAlphaStep, TEXT_ON } from "../src/trace/palette";
import { requestFor } from "../src/trace/timeline";

const fixture = (name: string): string => new URL(`./fixtures/${name}`, import.meta.url).pathname;
const info = JSON.parse(readFileSync(fixture("trace_tracks_v100.json"), "utf8")) as TracksInfo;

function answer(name: string) {
  const bytes = readFileSync(fixture(name));
  const data = new ArrayBuffer(bytes.byteLength);
  new Uint8Array(data).set(bytes);
  return decodeAnswer(data);
}

describe("rows of the timeline", () => {
  const layout = new Layout(info.sections, info.tracks, new Set());

  it("puts the Steps track first, then the sections in the server's order", () => {
    const first = layout.rows[0]!;
    expect(first).toMatchObject({ kind: "section", name: "Steps", y: 0 });
    expect(layout.rows[1]).toMatchObject({ kind: "track", y: SECTION_HEIGHT });
    expect(layout.order[0]).toBe(info.tracks.find((track) => track.name === "Steps")!.id);
    const sections = layout.rows.filter((row) => row.kind === "section").map((row) => (row.kind === "section" ? row.name : ""));
    expect(sections).toEqual(info.sections.filter((name) => info.tracks.some((track) => track.section === name)));
  });

  it("gives every lane a row and adds the heights up", () => {
    const lanes = info.tracks.reduce((sum, track) => sum + track.max_depth + 1, 0);
    const sections = new Set(info.tracks.map((track) => track.section)).size;
    expect(layout.height).toBe(sections * SECTION_HEIGHT + lanes * LANE_HEIGHT + info.tracks.length * TRACK_GAP);
    for (const track of info.tracks) {
      for (let depth = 0; depth <= track.max_depth; depth++) {
        const y = layout.laneY(track.id, depth);
        expect(layout.hit(y + 1)).toEqual({ kind: "lane", track: track.id, depth });
        expect(layout.hit(y + LANE_HEIGHT - 1)).toEqual({ kind: "lane", track: track.id, depth });
      }
    }
    expect(layout.hit(0)).toEqual({ kind: "section", section: 0 });
    expect(layout.hit(layout.height + 5)).toBeNull();
    expect(layout.hit(-3)).toBeNull();
  });

  it("lists the tracks a band of rows overlaps", () => {
    expect(layout.tracksBetween(0, layout.height)).toEqual(info.tracks.map((track) => track.id).sort((a, b) => a - b));
    const second = info.tracks[1]!;
    const y = layout.laneY(second.id, 0);
    expect(layout.tracksBetween(y, y + 1)).toEqual([second.id]);
    expect(layout.tracksBetween(layout.height, layout.height + 100)).toEqual([]);
  });

  it("hides a collapsed section's tracks, keeping a header to anchor arrows on", () => {
    const device = info.tracks.find((track) => track.section.startsWith("/device"))!;
    const collapsed = new Layout(info.sections, info.tracks, new Set([device.section]));
    expect(collapsed.height).toBeLessThan(layout.height);
    expect(Number.isNaN(collapsed.laneY(device.id, 0))).toBe(true);
    const header = collapsed.rows.find((row) => row.kind === "section" && row.name === device.section)!;
    expect(header).toMatchObject({ collapsed: true });
    expect(collapsed.anchorY(device.id, 0)).toBe(header.y + SECTION_HEIGHT / 2);
    expect(collapsed.tracksBetween(0, collapsed.height)).not.toContain(device.id);
    expect(collapsed.isEverything(collapsed.tracksBetween(0, collapsed.height))).toBe(false);
    expect(layout.isEverything(layout.tracksBetween(0, layout.height))).toBe(true);
  });
});

describe("an answer ready to draw", () => {
  const full = answer("trace_query_v100_full.bin");
  const params = requestFor({ start_ps: 0, end_ps: full.header.span_ps }, 160, full.header.span_ps, [], true);
  const prepared = new Prepared(full, params);

  it("orders wide events by colour, narrow ones apart, runs by opacity, each exactly once", () => {
    const seen = new Uint8Array(prepared.eventCount);
    const narrow = NARROW_PX * full.header.pixel_ps;
    expect(prepared.striped).toBe(true);
    for (let color = 0; color <= PALETTE.length; color++) {
      for (let at = prepared.colorStarts[color]!; at < prepared.colorStarts[color + 1]!; at++) {
        const row = prepared.colorOrder[at]!;
        seen[row]! += 1;
        expect(prepared.eventColor[row]).toBe(colorIndex(prepared.names[row]!));
        if (color < PALETTE.length) {
          expect(prepared.eventColor[row]).toBe(color);
          expect(full.eventDuration[row]!).toBeGreaterThanOrEqual(narrow);
        } else expect(full.eventDuration[row]!).toBeLessThan(narrow);
      }
    }
    expect(Array.from(seen).every((count) => count === 1)).toBe(true);
    const narrowCount = prepared.colorStarts[PALETTE.length + 1]! - prepared.colorStarts[PALETTE.length]!;
    expect(Array.from(prepared.laneNarrow).reduce((a, b) => a + b, 0)).toBe(narrowCount);
    expect(prepared.runStarts[RUN_ALPHA_STEPS]).toBe(prepared.runCount);
    const runs = new Set(Array.from(prepared.runOrder));
    expect(runs.size).toBe(prepared.runCount);
  });

  it("rasterises runs and narrow events into one pixel row per lane", () => {
    const width = full.header.width_px;
    const pixels = prepared.stripPixels();
    expect(pixels.length).toBe(width * full.laneTrack.length);
    const pixel = full.header.pixel_ps;
    for (let lane = 0; lane < full.laneTrack.length; lane++) {
      for (let run = full.laneRuns[lane]!; run < full.laneRuns[lane + 1]!; run++) {
        const column = Math.min(width - 1, Math.max(0, Math.floor(full.runStart[run]! / pixel)));
        const value = pixels[lane * width + column]!;
        // Covered: by the run (its colour, at least its opacity) or by a narrow event drawn over it.
        expect(value >>> 24).toBeGreaterThanOrEqual(Math.min(255, Math.round(runOpacity(full.runBusy[run]!) * 255)));
      }
      for (let row = full.laneEvents[lane]!; row < full.laneEvents[lane + 1]!; row++) {
        if (full.eventDuration[row]! >= NARROW_PX * pixel) continue;
        const column = Math.min(width - 1, Math.max(0, Math.floor(full.eventStart[row]! / pixel)));
        expect(pixels[lane * width + column]).toBe(packColor(PALETTE[prepared.eventColor[row]!]!));
      }
    }
    expect(packColor("#102030", 1)).toBe(0xff302010);
    expect(packColor("#102030", 0) >>> 24).toBe(0);
  });

  it("knows each event's lane and finds events and runs under a point", () => {
    for (let lane = 0; lane < full.laneTrack.length; lane++) {
      for (let row = full.laneEvents[lane]!; row < full.laneEvents[lane + 1]!; row++) {
        expect(prepared.eventLane[row]).toBe(lane);
        const hit = prepared.eventHit(row);
        const middle = hit.start_ps + hit.duration_ps / 2;
        const found = prepared.hit(hit.track, hit.depth, middle, 0);
        expect(found).toMatchObject({ kind: "event", id: full.eventId[row] });
        expect(prepared.rowOf(hit.id)).toBe(row);
      }
      for (let row = full.laneRuns[lane]!; row < full.laneRuns[lane + 1]!; row++) {
        const run = prepared.runHit(row);
        const found = prepared.hit(run.track, run.depth, (run.start_ps + run.end_ps) / 2, 0);
        // A run's middle is the run, unless an event lies there too (runs fill the gaps).
        expect(found?.kind === "run" ? found.row : row).toBe(row);
      }
    }
    expect(prepared.hit(99_999, 0, 0, 0)).toBeNull();
    expect(prepared.rowOf(-5)).toBe(-1);
  });
});

describe("colours", () => {
  it("hash names stably (FNV-1a)", () => {
    expect(hashName("")).toBe(0x811c9dc5);
    expect(hashName("a")).toBe(0xe40c292c);
    expect(colorIndex("aten::conv2d")).toBe(colorIndex("aten::conv2d"));
    expect(new Set(["aten::add", "aten::mul", "aten::conv2d", "cudaLaunchKernel", "Step 101"].map(colorIndex)).size).toBeGreaterThan(2);
  });

  it("writes names in the colour that reads on each box", () => {
    expect(TEXT_ON).toHaveLength(PALETTE.length);
    PALETTE.forEach((color, at) => {
      const light = luminance(color);
      const contrast = TEXT_ON[at] === "#ffffff" ? 1.05 / (light + 0.05) : (light + 0.05) / 0.05;
      expect(contrast).toBeGreaterThan(3);
    });
  });

  it("steps runs' opacity with their busy fraction", () => {
    expect(runAlphaStep(0)).toBe(0);
    expect(runAlphaStep(Number.NaN)).toBe(0);
    expect(runAlphaStep(1)).toBe(RUN_ALPHA_STEPS - 1);
    expect(runAlphaStep(0.5)).toBe(RUN_ALPHA_STEPS / 2);
    expect(runAlpha(RUN_ALPHA_STEPS - 1)).toBe(1);
    expect(runAlpha(0)).toBeGreaterThan(0.25);
  });
});
