import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DecodeError, decodeAnswer, eventName, LAYOUT, type TraceAnswer } from "../src/trace/decode";

const fixture = (name: string): string => new URL(`./fixtures/${name}`, import.meta.url).pathname;

/** The file's bytes in an ArrayBuffer of their own (as fetch's arrayBuffer() gives). */
function buffer(name: string): ArrayBuffer {
  const bytes = readFileSync(fixture(name));
  const copy = new ArrayBuffer(bytes.byteLength);
  new Uint8Array(copy).set(bytes);
  return copy;
}

interface Expectation {
  header: Record<string, unknown>;
  arrays: Record<string, { length: number; sum: number; first: number[]; last: number | null }>;
  bytes: number;
}

const expectation = (name: string): Expectation => JSON.parse(readFileSync(fixture(name), "utf8")) as Expectation;

describe.each(["trace_query_v100_full", "trace_query_v100_zoom"])("decoding %s (made by the Python encoder)", (name) => {
  const data = buffer(`${name}.bin`);
  const expected = expectation(`${name}.expect.json`);
  const answer = decodeAnswer(data);

  it("reads the header as Python does", () => {
    expect(answer.header).toEqual(expected.header);
    expect(answer.bytes).toBe(expected.bytes);
  });

  it("reads every array as Python does, without copying", () => {
    for (const [wire, field] of LAYOUT) {
      const array = answer[field] as ArrayLike<number> & { buffer: ArrayBuffer };
      const want = expected.arrays[wire]!;
      expect(array.buffer, wire).toBe(data);
      expect(array.length, wire).toBe(want.length);
      let sum = 0;
      for (let at = 0; at < array.length; at++) sum += array[at]!;
      expect(sum, wire).toBeCloseTo(want.sum, 0);
      expect(Array.from(array).slice(0, 5), wire).toEqual(want.first);
      if (want.last !== null) expect(array[array.length - 1], wire).toBe(want.last);
    }
  });

  it("keeps lanes' events and runs sorted by start, names in the header", () => {
    const lanes = answer.laneTrack.length;
    for (let lane = 0; lane < lanes; lane++) {
      for (let row = answer.laneEvents[lane]! + 1; row < answer.laneEvents[lane + 1]!; row++) {
        expect(answer.eventStart[row]!).toBeGreaterThanOrEqual(answer.eventStart[row - 1]!);
      }
      for (let row = answer.laneRuns[lane]! + 1; row < answer.laneRuns[lane + 1]!; row++) {
        expect(answer.runStart[row]!).toBeGreaterThanOrEqual(answer.runStart[row - 1]!);
      }
    }
    for (let row = 0; row < answer.eventId.length; row++) expect(eventName(answer, row)).not.toBe("");
  });

  it("counts what it merged: events plus run counts are the overlapping events", () => {
    let merged = 0;
    for (const count of answer.runCount) merged += count;
    expect(answer.eventId.length + merged).toBe(answer.header.counts.overlapping);
  });
});

describe("refusing what is not an answer", () => {
  const good = buffer("trace_query_v100_zoom.bin");

  it("refuses a wrong magic or version", () => {
    const copy = good.slice(0);
    new Uint8Array(copy)[0] = "X".charCodeAt(0);
    expect(() => decodeAnswer(copy)).toThrow(DecodeError);
    const version = good.slice(0);
    new DataView(version).setUint32(4, 2, true);
    expect(() => decodeAnswer(version)).toThrow(/version 1/);
  });

  it("refuses a truncated answer", () => {
    expect(() => decodeAnswer(good.slice(0, 8))).toThrow(DecodeError);
    expect(() => decodeAnswer(good.slice(0, 40))).toThrow(DecodeError);
    expect(() => decodeAnswer(good.slice(0, good.byteLength - 8))).toThrow(/outside/);
  });

  it("decodes an answer with nothing in it", () => {
    const data = buffer("trace_query_v100_empty.bin");
    const answer: TraceAnswer = decodeAnswer(data);
    expect(answer.header).toEqual(expectation("trace_query_v100_empty.expect.json").header);
    expect(answer.laneTrack.length).toBe(0);
    expect(Array.from(answer.laneEvents)).toEqual([0]);
    expect(Array.from(answer.laneRuns)).toEqual([0]);
    expect(answer.eventStart.length).toBe(0);
    expect(answer.runStart.length).toBe(0);
  });
});
