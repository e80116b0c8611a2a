/**
 * The trace viewer's binary query answer ("SSTV", version 1; the layout is documented in
 * src/stepscope/viewer/encoding.py): a JSON header, then little-endian typed arrays at
 * 8-aligned offsets. Decoding wraps the arrays over the response's ArrayBuffer without
 * copying them, so a screenful of events costs one fetch and a header parse.
 */

export const MAGIC = "SSTV";
export const VERSION = 1;
const PREAMBLE_BYTES = 16;

/** A track as the server describes it (`Track.to_json()`). */
export interface TrackInfo {
  id: number;
  section: string;
  name: string;
  plane: number;
  line: number;
  event_count: number;
  max_depth: number;
  first_lane: number;
}

export interface AnswerHeader {
  version: number;
  start_ps: number;
  end_ps: number;
  width_px: number;
  pixel_ps: number;
  min_event_ps: number;
  profile_start_ns: number;
  span_ps: number;
  name_filter: string | null;
  counts: { lanes: number; events: number; runs: number; overlapping: number };
  tracks: TrackInfo[];
  names: Record<string, string>;
  arrays: { name: string; type: string; offset: number; length: number }[];
}

/** One decoded answer: the header and the arrays (views into the response buffer). */
export interface TraceAnswer {
  header: AnswerHeader;
  /** Lane k: its track id and depth; its events are rows laneEvents[k]..laneEvents[k+1]-1. */
  laneTrack: Int32Array;
  laneDepth: Int32Array;
  laneEvents: Int32Array;
  laneRuns: Int32Array;
  /** ps relative to header.start_ps. */
  eventStart: Float64Array;
  eventDuration: Float64Array;
  eventId: Int32Array;
  eventName: Int32Array;
  /** ps relative to header.start_ps. */
  runStart: Float32Array;
  runEnd: Float32Array;
  runCount: Uint32Array;
  runBusy: Float32Array;
  /** Bytes of the response. */
  bytes: number;
}

type ArrayKind = "int32" | "uint32" | "float32" | "float64";

const CONSTRUCTORS = {
  int32: Int32Array,
  uint32: Uint32Array,
  float32: Float32Array,
  float64: Float64Array,
} as const;

/** Wire name -> [TraceAnswer field, type], in the order the encoder writes them. */
export const LAYOUT: [string, keyof TraceAnswer, ArrayKind][] = [
  ["lane_track", "laneTrack", "int32"],
  ["lane_depth", "laneDepth", "int32"],
  ["lane_events", "laneEvents", "int32"],
  ["lane_runs", "laneRuns", "int32"],
  ["event_start", "eventStart", "float64"],
  ["event_duration", "eventDuration", "float64"],
  ["event_id", "eventId", "int32"],
  ["event_name", "eventName", "int32"],
  ["run_start", "runStart", "float32"],
  ["run_end", "runEnd", "float32"],
  ["run_count", "runCount", "uint32"],
  ["run_busy", "runBusy", "float32"],
];

export class DecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DecodeError";
  }
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Reads an answer. Checks the magic, version, that every array lies inside the buffer at an
 * aligned offset, and that the lane offsets agree with the event and run counts (a truncated
 * or foreign response fails here, not as a wrong picture).
 */
export function decodeAnswer(buffer: ArrayBuffer): TraceAnswer {
  if (!LITTLE_ENDIAN) throw new DecodeError("this machine is big-endian; the trace viewer's arrays are little-endian");
  if (buffer.byteLength < PREAMBLE_BYTES) throw new DecodeError(`not a trace viewer answer: ${buffer.byteLength} bytes`);
  const view = new DataView(buffer);
  const magic = String.fromCharCode(view.getUint8(0), view.getUint8(1), view.getUint8(2), view.getUint8(3));
  const version = view.getUint32(4, true);
  if (magic !== MAGIC || version !== VERSION) {
    throw new DecodeError(`not a trace viewer answer of version ${VERSION} (magic ${JSON.stringify(magic)}, version ${version})`);
  }
  const headerBytes = view.getUint32(8, true);
  if (PREAMBLE_BYTES + headerBytes > buffer.byteLength) throw new DecodeError("the answer's header runs past its end");
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, PREAMBLE_BYTES, headerBytes))) as AnswerHeader;
  const found = new Map(header.arrays.map((descriptor) => [descriptor.name, descriptor]));
  const answer: Partial<Record<keyof TraceAnswer, unknown>> = { header, bytes: buffer.byteLength };
  for (const [wire, field, kind] of LAYOUT) {
    const descriptor = found.get(wire);
    if (!descriptor) throw new DecodeError(`the answer lacks the array ${wire}`);
    if (descriptor.type !== kind) throw new DecodeError(`array ${wire} is ${descriptor.type}, expected ${kind}`);
    const Type = CONSTRUCTORS[kind];
    const { offset, length } = descriptor;
    if (offset % 8 !== 0 || offset < PREAMBLE_BYTES + headerBytes || offset + length * Type.BYTES_PER_ELEMENT > buffer.byteLength || length < 0) {
      throw new DecodeError(`array ${wire} lies outside the answer or is misaligned`);
    }
    answer[field] = new Type(buffer, offset, length);
  }
  const decoded = answer as TraceAnswer;
  const { lanes, events, runs } = header.counts;
  if (
    decoded.laneTrack.length !== lanes ||
    decoded.laneEvents.length !== lanes + 1 ||
    decoded.laneRuns.length !== lanes + 1 ||
    decoded.eventStart.length !== events ||
    decoded.runStart.length !== runs ||
    decoded.laneEvents[lanes] !== events ||
    decoded.laneRuns[lanes] !== runs
  ) {
    throw new DecodeError("the answer's lane offsets do not match its event and run counts");
  }
  return decoded;
}

/** The name of event row `row` of an answer ("" when the header lacks it). */
export function eventName(answer: TraceAnswer, row: number): string {
  return answer.header.names[String(answer.eventName[row])] ?? "";
}
