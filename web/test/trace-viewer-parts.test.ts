import { afterEach, describe, expect, it, vi } from "vitest";
import type { FlowEnd, Match } from "../src/trace/api";
import { answerText } from "../src/trace/panels";
import { filterFor, findCursor } from "../src/trace/search";
import { flowTarget } from "../src/trace/selection";
import { addressFor, URL_DELAY_MS, UrlSync, viewFromAddress } from "../src/trace/url_sync";

const selection = { run: "gpu", tool: "trace_viewer" };

describe("the address", () => {
  it("opens on the range it names, else the whole profile", () => {
    expect(viewFromAddress("?start_ps=100&end_ps=5000", 1e6)).toEqual({ start_ps: 100, end_ps: 5000 });
    expect(viewFromAddress("?start_ps=5000&end_ps=100", 1e6)).toEqual({ start_ps: 0, end_ps: 1e6 });
    expect(viewFromAddress("", 1e6)).toEqual({ start_ps: 0, end_ps: 1e6 });
  });

  it("follows the view in whole picoseconds, keeping the other parameters, only for its own run and tool", () => {
    const search = "?run=gpu&host=h&tool=trace_viewer&start_ps=1&end_ps=2";
    expect(addressFor("/", search, selection, { start_ps: 10.4, end_ps: 99.6 })).toBe("/?run=gpu&host=h&tool=trace_viewer&start_ps=10&end_ps=100");
    expect(addressFor("/x/", "?run=gpu&tool=trace_viewer", selection, { start_ps: 0, end_ps: 5 })).toBe("/x/?run=gpu&tool=trace_viewer&start_ps=0&end_ps=5");
    expect(addressFor("/", "?run=gpu&tool=overview_page", selection, { start_ps: 0, end_ps: 5 })).toBeNull();
    expect(addressFor("/", "?run=cpu&tool=trace_viewer", selection, { start_ps: 0, end_ps: 5 })).toBeNull();
  });

  describe("kept in step", () => {
    afterEach(() => {
      vi.useRealTimers();
      vi.unstubAllGlobals();
    });

    function browser(search: string) {
      const location = { pathname: "/", search };
      const replaced: string[] = [];
      const history = {
        state: { mine: true },
        replaceState: (_state: unknown, _title: string, url: string) => {
          replaced.push(url);
          location.search = url.slice(url.indexOf("?"));
        },
      };
      vi.stubGlobal("location", location);
      vi.stubGlobal("history", history);
      vi.useFakeTimers();
      return { location, replaced };
    }

    it("replaces the address at most once per delay, with the view at that time, then says so", () => {
      const { replaced } = browser("?run=gpu&tool=trace_viewer");
      let view = { start_ps: 0, end_ps: 10 };
      const synced = vi.fn();
      const sync = new UrlSync({ selection, view: () => view, synced });
      sync.schedule();
      view = { start_ps: 5, end_ps: 15 };
      sync.schedule();
      vi.advanceTimersByTime(URL_DELAY_MS - 1);
      expect(replaced).toEqual([]);
      vi.advanceTimersByTime(1);
      expect(replaced).toEqual(["/?run=gpu&tool=trace_viewer&start_ps=5&end_ps=15"]);
      expect(synced).toHaveBeenCalledTimes(1);
      // The same address: not replaced again, but still synced.
      sync.schedule();
      vi.advanceTimersByTime(URL_DELAY_MS);
      expect(replaced).toHaveLength(1);
      expect(synced).toHaveBeenCalledTimes(2);
    });

    it("leaves an address that moved on to another tool alone, and stops when closed", () => {
      const { location, replaced } = browser("?run=gpu&tool=trace_viewer");
      const synced = vi.fn();
      const sync = new UrlSync({ selection, view: () => ({ start_ps: 0, end_ps: 10 }), synced });
      location.search = "?run=gpu&tool=overview_page";
      sync.schedule();
      vi.advanceTimersByTime(URL_DELAY_MS);
      expect(replaced).toEqual([]);
      expect(synced).not.toHaveBeenCalled();
      location.search = "?run=gpu&tool=trace_viewer";
      sync.schedule();
      sync.close();
      vi.advanceTimersByTime(URL_DELAY_MS);
      expect(replaced).toEqual([]);
    });
  });
});

describe("search", () => {
  const match: Match & { text: string } = { id: 42, track: 1, depth: 0, start_ps: 5, duration_ps: 1, name: "conv", ordinal: 3, total: 9, text: "conv" };

  it("steps on from the match shown for the same text, else starts over", () => {
    expect(findCursor(match, "conv", false)).toEqual({ cursor: { after_id: 42, before: false }, from: match });
    expect(findCursor(match, "conv", true)).toEqual({ cursor: { after_id: 42, before: true }, from: match });
    expect(findCursor(match, "relu", false)).toEqual({ cursor: { before: false }, from: null });
    expect(findCursor(null, "conv", true)).toEqual({ cursor: { before: true }, from: null });
  });

  it("filters by the trimmed text only while 'Only matches' is ticked", () => {
    expect(filterFor(true, "  conv ")).toBe("conv");
    expect(filterFor(false, "conv")).toBe("");
  });
});

describe("details", () => {
  it("follows a flow only to an event the server placed on a track", () => {
    const end: FlowEnd = { name: "k", start_ps: 10, duration_ps: 2, plane: "p", line: "l" };
    expect(flowTarget({ ...end, id: 3, track: 4 })).toEqual({ id: 3, name: "k", start_ps: 10, duration_ps: 2, track: 4, depth: 0 });
    expect(flowTarget({ ...end, id: 3, track: 4, depth: 2 })).toMatchObject({ depth: 2 });
    expect(flowTarget({ ...end, track: 4 })).toBeNull();
    expect(flowTarget({ ...end, id: 3 })).toBeNull();
  });

  it("says what an answer holds", () => {
    expect(answerText({ header: { counts: { events: 12345, runs: 7 } } as never, bytes: 4096 })).toBe("12,345 events, 7 runs · 4 KiB");
  });
});
