import { describe, expect, it } from "vitest";
import { apiUrl, csvUrl } from "../src/api";
import { buildQuery, parseQuery, pickHost, pickRun, pickTool, resolveRunHost, sameSelection } from "../src/state/url";

const runs = [
  { name: "a", hosts: ["h1", "h2"] },
  { name: "b/session 2", hosts: ["h2", "h3"] },
];

describe("the address", () => {
  it("round-trips a selection, escaping what needs it", () => {
    const selection = { run: "b/session 2", host: "h&3", tool: "op_profile" };
    const query = buildQuery(selection);
    expect(query).toBe("?run=b%2Fsession+2&host=h%263&tool=op_profile");
    expect(parseQuery(query)).toEqual(selection);
  });
  it("reads missing parameters as missing", () => {
    expect(parseQuery("?tool=kernel_stats")).toEqual({ tool: "kernel_stats" });
    expect(parseQuery("")).toEqual({});
  });
});

describe("fallbacks", () => {
  it("falls back to the first run, host and tool", () => {
    expect(pickRun(runs, "nope")?.name).toBe("a");
    expect(pickRun(runs)?.name).toBe("a");
    expect(pickRun([], "a")).toBeNull();
    expect(pickHost(runs[0]!, "h3")).toBe("h1");
    expect(pickTool(["overview_page", "op_profile"], "trace_viewer")).toBe("overview_page");
  });
  it("keeps the host and tool when the new run has them", () => {
    expect(resolveRunHost(runs, { run: "b/session 2", host: "h2" })).toEqual({ run: "b/session 2", host: "h2" });
    expect(resolveRunHost(runs, { run: "b/session 2", host: "h1" })).toEqual({ run: "b/session 2", host: "h2" });
    expect(pickTool(["overview_page", "op_profile"], "op_profile")).toBe("op_profile");
  });
  it("has no selection without runs", () => {
    expect(resolveRunHost([], { run: "a" })).toBeNull();
  });
  it("compares selections", () => {
    expect(sameSelection({ run: "a", host: "h", tool: "t" }, { run: "a", host: "h", tool: "t" })).toBe(true);
    expect(sameSelection({ run: "a", host: "h", tool: "t" }, null)).toBe(false);
  });
});

describe("API addresses", () => {
  it("builds the CSV export link of a table", () => {
    expect(csvUrl({ run: "r 1", host: "h", tool: "kernel_stats" }, "kernels")).toBe("/api/csv?run=r+1&host=h&tool=kernel_stats&table=kernels");
    expect(apiUrl("/api/runs", {})).toBe("/api/runs");
  });
});
