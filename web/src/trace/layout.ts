/**
 * The trace viewer's rows, free of the DOM: a header per section (the Steps track's first,
 * then host planes, then devices, in the server's order), one row per lane (track, depth)
 * below it unless the section is collapsed. Heights are CSS pixels from the top of the
 * scrolled content; the canvas draws the slice that is on screen.
 */

import type { TrackInfo } from "./decode";

export const SECTION_HEIGHT = 22;
export const LANE_HEIGHT = 18;
/** Space under each track (a separator line). */
export const TRACK_GAP = 3;

export interface SectionRow {
  kind: "section";
  y: number;
  height: number;
  section: number;
  name: string;
  collapsed: boolean;
  trackCount: number;
  eventCount: number;
}

export interface TrackRow {
  kind: "track";
  y: number;
  height: number;
  section: number;
  track: TrackInfo;
}

export type Row = SectionRow | TrackRow;

export type Hit = { kind: "section"; section: number } | { kind: "lane"; track: number; depth: number } | null;

/** Section order: the server's `sections`, then any a track names that the list lacks. */
function sectionOrder(sections: readonly string[], tracks: readonly TrackInfo[]): string[] {
  const order = [...sections];
  const known = new Set(order);
  for (const track of tracks) {
    if (!known.has(track.section)) {
      known.add(track.section);
      order.push(track.section);
    }
  }
  return order;
}

export class Layout {
  readonly sections: string[];
  /** Rows top to bottom (sections and the tracks of expanded sections). */
  readonly rows: Row[];
  readonly height: number;
  /** By track id: content y of the track's first lane; NaN when its section is collapsed. */
  readonly trackTop: Float64Array;
  /** By track id: content y of its section's header. */
  readonly trackSectionY: Float64Array;
  /** By track id: its section's index. */
  readonly trackSection: Int32Array;
  /** Every track id in display order. */
  readonly order: number[];
  readonly tracks: readonly TrackInfo[];

  constructor(sections: readonly string[], tracks: readonly TrackInfo[], collapsed: ReadonlySet<string>) {
    this.tracks = tracks;
    this.sections = sectionOrder(sections, tracks);
    const bySection = new Map<string, TrackInfo[]>(this.sections.map((name) => [name, []]));
    for (const track of tracks) bySection.get(track.section)?.push(track);
    const size = tracks.reduce((most, track) => Math.max(most, track.id + 1), 0);
    this.trackTop = new Float64Array(size).fill(Number.NaN);
    this.trackSectionY = new Float64Array(size).fill(Number.NaN);
    this.trackSection = new Int32Array(size).fill(-1);
    this.rows = [];
    this.order = [];
    let y = 0;
    this.sections.forEach((name, section) => {
      const members = (bySection.get(name) ?? []).slice().sort((a, b) => a.id - b.id);
      if (members.length === 0) return;
      const isCollapsed = collapsed.has(name);
      this.rows.push({
        kind: "section",
        y,
        height: SECTION_HEIGHT,
        section,
        name,
        collapsed: isCollapsed,
        trackCount: members.length,
        eventCount: members.reduce((sum, track) => sum + track.event_count, 0),
      });
      const headerY = y;
      y += SECTION_HEIGHT;
      for (const track of members) {
        this.order.push(track.id);
        this.trackSectionY[track.id] = headerY;
        this.trackSection[track.id] = section;
        if (isCollapsed) continue;
        const height = (track.max_depth + 1) * LANE_HEIGHT + TRACK_GAP;
        this.trackTop[track.id] = y;
        this.rows.push({ kind: "track", y, height, section, track });
        y += height;
      }
    });
    this.height = y;
  }

  /** Content y of lane (track, depth), NaN when it is not shown (collapsed, unknown). */
  laneY(track: number, depth: number): number {
    const top = this.trackTop[track];
    return top === undefined ? Number.NaN : top + depth * LANE_HEIGHT;
  }

  /**
   * Where an arrow to (track, depth) ends: the lane's middle, or its section header's when
   * the section is collapsed; NaN for an unknown track.
   */
  anchorY(track: number, depth: number): number {
    const y = this.laneY(track, depth);
    if (!Number.isNaN(y)) return y + LANE_HEIGHT / 2;
    const header = this.trackSectionY[track];
    return header === undefined ? Number.NaN : header + SECTION_HEIGHT / 2;
  }

  /** Index of the first row whose bottom is below content y `y` (rows.length if none). */
  firstRowBelow(y: number): number {
    let lo = 0;
    let hi = this.rows.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const row = this.rows[mid] as Row;
      if (row.y + row.height <= y) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** What is at content y: a section header, a lane, or nothing (gaps, past the end). */
  hit(y: number): Hit {
    const row = this.rows[this.firstRowBelow(y)];
    if (!row || y < row.y) return null;
    if (row.kind === "section") return { kind: "section", section: row.section };
    const depth = Math.floor((y - row.y) / LANE_HEIGHT);
    if (depth > row.track.max_depth) return null;
    return { kind: "lane", track: row.track.id, depth };
  }

  /** Track ids of the expanded tracks overlapping content [top, bottom), ascending. */
  tracksBetween(top: number, bottom: number): number[] {
    const ids: number[] = [];
    for (let at = this.firstRowBelow(top); at < this.rows.length; at++) {
      const row = this.rows[at] as Row;
      if (row.y >= bottom) break;
      if (row.kind === "track") ids.push(row.track.id);
    }
    return ids.sort((a, b) => a - b);
  }

  /** Whether every track is expanded (a request can then leave out `tracks=`). */
  isEverything(ids: readonly number[]): boolean {
    return ids.length === this.tracks.length;
  }
}
