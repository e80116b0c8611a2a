/**
 * The critical path drawn over the timeline (the toolbar's "Critical path" toggle): the
 * path of the step the view is on, from the critical_path tool's JSON, each segment a band
 * over its thread's or stream's track (the tool's plane and line indexes are the viewer's
 * tracks'). Off, the frame does nothing more than check that it is off.
 */

import type { CriticalPath } from "../api";
import { KIND_COLORS, stepAt } from "../pages/critical_path_data";
import type { TrackInfo } from "./decode";

/** A path segment placed on a track (-1: no track of the viewer holds its line). */
export interface PathMark {
  start_ps: number;
  end_ps: number;
  track: number;
  color: string;
}

export interface PathOverlay {
  /** Index in the tool's `steps`, and the step's number. */
  index: number;
  step: number;
  marks: PathMark[];
}

const OTHER_COLOR = "#d81b60";

/** The track id of each (plane, line), keyed "plane:line". */
export function trackIds(tracks: readonly TrackInfo[]): Map<string, number> {
  return new Map(tracks.map((track) => [`${track.plane}:${track.line}`, track.id]));
}

/** The overlay of the step holding (or nearest) `t_ps`; null without steps. */
export function overlayAt(data: CriticalPath, tracks: ReadonlyMap<string, number>, t_ps: number): PathOverlay | null {
  const index = stepAt(data.steps, t_ps);
  const step = data.steps[index];
  if (!step) return null;
  // The tool gives the segments as columns (entry i of each is segment i's).
  const { start_ps, end_ps, kind, plane, line } = step.segments;
  return {
    index,
    step: step.step,
    marks: start_ps.map((start, i) => ({
      start_ps: start,
      end_ps: end_ps[i]!,
      track: tracks.get(`${plane[i]}:${line[i]}`) ?? -1,
      color: KIND_COLORS[kind[i]!] ?? OTHER_COLOR,
    })),
  };
}
