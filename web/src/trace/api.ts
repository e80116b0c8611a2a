/**
 * The trace viewer's requests (docs/dashboard.md, "Trace viewer API"). Every one answers
 * 202 with the progress JSON while the profile's index is being built; these calls ask
 * again every POLL_MS, reporting the progress, until the answer is ready.
 */

import { ApiError, Cancelled, POLL_MS, apiUrl, errorOf, sleep, type Pending, type Selection } from "../api";
import { parseJson } from "../rawjson";
import { decodeAnswer, type TraceAnswer, type TrackInfo } from "./decode";
import type { QueryParams } from "./timeline";

export interface TracksInfo {
  source: string;
  host: string;
  start_ns: number;
  span_ps: number;
  event_count: number;
  sections: string[];
  tracks: TrackInfo[];
}

export interface Match {
  id: number;
  track: number;
  depth: number;
  start_ps: number;
  duration_ps: number;
  name: string;
  ordinal: number;
  total: number;
}

/** A value as JSON.parse gives it. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export interface Stat {
  name: string;
  value: JsonValue;
}

export interface EventDetails {
  ref?: [number, number];
  id?: number;
  track?: number;
  depth?: number;
  name: string;
  /** The name as the source wrote it, where the timeline shows a shorter one (XLA's HLO text). */
  full_name?: string;
  display_name?: string;
  category?: string;
  plane: string;
  line: string;
  start_ps: number;
  duration_ps: number;
  end_ps?: number;
  start_ns?: number;
  ids?: Record<string, number>;
  stats?: Stat[];
  parent?: [number, number] | null;
}

export interface FlowEnd {
  ref?: [number, number];
  id?: number;
  track?: number;
  depth?: number;
  name: string;
  plane: string;
  line: string;
  start_ps: number;
  duration_ps: number;
}

export interface Flow {
  id: number;
  category: string;
  from: FlowEnd;
  to: FlowEnd;
}

export interface EventAnswer {
  details: EventDetails;
  flows: Flow[];
}

export interface SummaryName {
  name: string;
  /** The event name that `name` shortens (XLA's whole HLO text), where it does. */
  full_name?: string;
  count: number;
  total_ps: number;
  selected_ps: number;
  max_ps: number;
}

export interface SummaryAnswer {
  start_ps: number;
  end_ps: number;
  events: number;
  names: SummaryName[];
}

type Params = Record<string, string>;

function base(selection: Selection): Params {
  return { run: selection.run, host: selection.host };
}

/** GET `url`, polling while it answers 202; `read` turns the final answer into a value. */
async function polled<T>(url: string, signal: AbortSignal, read: (response: Response) => Promise<T>, onPending?: (pending: Pending) => void): Promise<T> {
  for (;;) {
    let response: Response;
    try {
      response = await fetch(url, { signal });
    } catch (error) {
      if (signal.aborted) throw new Cancelled();
      throw error;
    }
    if (signal.aborted) throw new Cancelled();
    if (response.status === 202) {
      const pending = (await response.json().catch(() => ({ state: "loading", progress: 0, message: "" }))) as Pending;
      onPending?.(pending);
      await sleep(POLL_MS, signal);
      continue;
    }
    if (!response.ok) throw await errorOf(response);
    try {
      return await read(response);
    } catch (error) {
      if (signal.aborted) throw new Cancelled();
      throw error;
    }
  }
}

const json = <T>(response: Response): Promise<T> => response.json() as Promise<T>;
/** JSON whose numbers keep their text (rawjson.ts): an event's uint64 ids past 2^53. */
const exactJson = async <T>(response: Response): Promise<T> => parseJson(await response.text()) as T;

export function getTracks(selection: Selection, signal: AbortSignal, onPending: (pending: Pending) => void): Promise<TracksInfo> {
  return polled(apiUrl("trace/tracks", base(selection)), signal, json<TracksInfo>, onPending);
}

/** The address of a query (tracks left out when every track is asked for). */
export function queryUrl(selection: Selection, params: QueryParams): string {
  const query: Params = {
    ...base(selection),
    start_ps: String(params.start_ps),
    end_ps: String(params.end_ps),
    width_px: String(params.width_px),
  };
  if (!params.all) query.tracks = params.tracks.join(",");
  if (params.filter) query.filter = params.filter;
  return apiUrl("trace/query", query);
}

export function getQuery(selection: Selection, params: QueryParams, signal: AbortSignal): Promise<TraceAnswer> {
  return polled(queryUrl(selection, params), signal, async (response) => decodeAnswer(await response.arrayBuffer()));
}

export interface FindCursor {
  /** The match shown now (steps through events starting at the same time one by one). */
  after_id?: number;
  after_ps?: number;
  before?: boolean;
}

export async function findNext(selection: Selection, text: string, cursor: FindCursor, signal: AbortSignal): Promise<Match | null> {
  const query: Params = { ...base(selection), text };
  if (cursor.after_id !== undefined) query.after_id = String(cursor.after_id);
  else if (cursor.after_ps !== undefined) query.after_ps = String(Math.round(cursor.after_ps));
  if (cursor.before) query.before = "1";
  const answer = await polled(apiUrl("trace/find", query), signal, json<{ match: Match | null }>);
  return answer.match;
}

export function getEvent(selection: Selection, id: number, signal: AbortSignal): Promise<EventAnswer> {
  return polled(apiUrl("trace/event", { ...base(selection), id: String(id) }), signal, exactJson<EventAnswer>);
}

export function getSummary(selection: Selection, start_ps: number, end_ps: number, tracks: number[] | null, signal: AbortSignal): Promise<SummaryAnswer> {
  const query: Params = { ...base(selection), start_ps: String(Math.round(start_ps)), end_ps: String(Math.round(end_ps)) };
  if (tracks) query.tracks = tracks.join(",");
  return polled(apiUrl("trace/summary", query), signal, json<SummaryAnswer>);
}

/** The export's formats (the API's `format=`): gzipped Chrome trace JSON, or Perfetto's protobuf trace. */
export type ExportFormat = "json" | "pftrace";

/** The download address of a range in `format`. */
export function exportUrl(selection: Selection, start_ps: number, end_ps: number, format: ExportFormat = "json"): string {
  const query: Params = { ...base(selection), start_ps: String(Math.round(start_ps)), end_ps: String(Math.round(end_ps)) };
  if (format !== "json") query.format = format;
  return apiUrl("trace/export", query);
}

/** An error as one line for the page. */
export function errorText(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  return error instanceof Error ? error.message : String(error);
}

export { ApiError, Cancelled };
