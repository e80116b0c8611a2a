import { describe, expect, it } from "vitest";
import { apiUrl, csvUrl } from "../src/api";
import { exportUrl, queryUrl } from "../src/trace/api";
import { buildQuery, evidenceAddress, keptParams, notFoundNotice, parseQuery, pickHost, pickRun, pickTool, resolveRunHost, sameSelection } from "../src/state/url";
import { tableAddress } from "../src/state/table-url";

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
    expect(csvUrl({ run: "r 1", host: "h", tool: "kernel_stats" }, "kernels")).toBe("api/csv?run=r+1&host=h&tool=kernel_stats&table=kernels");
    expect(apiUrl("runs")).toBe("api/runs");
  });
  it("are relative to the page, so they work at / and under TensorBoard's plugin prefix", () => {
    const selection = { run: "r", host: "h", tool: "trace_viewer" };
    const addresses = [
      apiUrl("runs"),
      csvUrl(selection, "kernels"),
      queryUrl(selection, { start_ps: 0, end_ps: 10, width_px: 100, tracks: [1], all: false, filter: "" }),
      exportUrl(selection, 0, 10),
    ];
    for (const address of addresses) {
      expect(address.startsWith("/")).toBe(false);
      const api = (page: string): string => new URL(address, page).pathname;
      expect(api("http://127.0.0.1:9001/?run=r")).toMatch(/^\/api\//);
      expect(api("http://127.0.0.1:6006/proxy/6006/data/plugin/stepscope/index.html?run=r")).toMatch(/^\/proxy\/6006\/data\/plugin\/stepscope\/api\//);
    }
  });
});

describe("a tool's own state in the address", () => {
  const selection = { run: "a", host: "h1", tool: "trace_viewer" };
  it("keeps a deep link's range when the address is about the same selection", () => {
    const search = "?run=a&host=h1&tool=trace_viewer&start_ps=100&end_ps=900";
    const kept = keptParams(search, selection);
    expect(kept?.toString()).toBe("start_ps=100&end_ps=900");
    expect(buildQuery(selection, kept)).toBe(search);
    // An address naming only part of the selection still belongs to it.
    expect(keptParams("?tool=trace_viewer&start_ps=1&end_ps=2", selection)?.get("end_ps")).toBe("2");
  });
  it("drops it when the selection is another one", () => {
    expect(keptParams("?run=a&host=h1&tool=trace_viewer&start_ps=1&end_ps=2", { ...selection, tool: "overview_page" })).toBeUndefined();
    expect(keptParams("?run=b&tool=trace_viewer&start_ps=1&end_ps=2", selection)).toBeUndefined();
    expect(keptParams("?run=a&host=h1&tool=trace_viewer", selection)).toBeUndefined();
  });
  it("never lets extra parameters override the selection", () => {
    expect(buildQuery(selection, new URLSearchParams("tool=x&start_ps=5"))).toBe("?run=a&host=h1&tool=trace_viewer&start_ps=5");
  });
});

describe("saying what a deep link named that is not there", () => {
  const tools = ["overview_page", "op_profile"];
  function settle(wanted: { run?: string; host?: string; tool?: string }): string {
    const runHost = resolveRunHost(runs, wanted)!;
    return notFoundNotice(wanted, { ...runHost, tool: pickTool(tools, wanted.tool) });
  }
  it("says nothing when everything was found, or nothing was asked", () => {
    expect(settle({ run: "b/session 2", host: "h3", tool: "op_profile" })).toBe("");
    expect(settle({})).toBe("");
  });
  it("names the missing run and the run shown instead", () => {
    // "nope" is no run; the first run, "a", is shown (and its first host, h1).
    expect(settle({ run: "nope" })).toBe("No run named 'nope' in this log directory; showing 'a'.");
  });
  it("names a missing host, and a host the fallback run lacks", () => {
    // Run "a" has h1 and h2, not h3: its first host, h1, is shown.
    expect(settle({ run: "a", host: "h3" })).toBe("No host named 'h3' in run 'a'; showing 'h1'.");
    // The fallback run "a" has h2, so the wanted host is kept and only the run is reported.
    expect(settle({ run: "nope", host: "h2" })).toBe("No run named 'nope' in this log directory; showing 'a'.");
  });
  it("names a missing tool", () => {
    // "not_a_tool" is not among the tools; the first, overview_page, is shown.
    expect(settle({ tool: "not_a_tool" })).toBe("No tool named 'not_a_tool' for this profile; showing 'overview_page'.");
  });
  it("puts everything not found on one line", () => {
    const notice = settle({ run: "nope", host: "h3", tool: "not_a_tool" });
    expect(notice.split("\n")).toHaveLength(1);
    expect(notice).toBe(
      "No run named 'nope' in this log directory; showing 'a'. No host named 'h3' in run 'a'; showing 'h1'. No tool named 'not_a_tool' for this profile; showing 'overview_page'.",
    );
  });
});

describe("a recommendation's evidence link", () => {
  const selection = { run: "b/session 2", host: "h1", tool: "overview_page", options: {} };
  it("opens its tool with its table sorted biggest first and searched for its op", () => {
    const address = evidenceAddress(selection, { tool: "framework_op_stats", table: "framework_ops", sort_key: "total_self_time_us", query: "aten::conv2d" });
    // Written by hand: the selection's run and host, the evidence's tool, then sort and q.
    expect(address).toBe("?run=b%2Fsession+2&host=h1&tool=framework_op_stats&sort=framework_ops%3Atotal_self_time_us%3Adesc&q=framework_ops%3Aaten%3A%3Aconv2d");
    // The page reads back the same sort and search from it.
    const params = new URLSearchParams(address);
    expect(tableAddress(params, "framework_ops")).toEqual({ sort: { key: "total_self_time_us", direction: "descending" }, filter: "aten::conv2d" });
    expect(parseQuery(address)).toEqual({ run: "b/session 2", host: "h1", tool: "framework_op_stats" });
  });
  it("sorts without a search when the evidence keeps every row", () => {
    const address = evidenceAddress(selection, { tool: "input_pipeline_analyzer", table: "steps", sort_key: "input_percent", query: "" });
    expect(address).toBe("?run=b%2Fsession+2&host=h1&tool=input_pipeline_analyzer&sort=steps%3Ainput_percent%3Adesc");
    expect(tableAddress(new URLSearchParams(address), "steps")).toEqual({ sort: { key: "input_percent", direction: "descending" }, filter: "" });
  });
  it("keeps a search text with colons, spaces and ampersands whole", () => {
    const name = "%all-reduce = f32[5]{0} all-reduce(a & b), replica_groups={}";
    const address = evidenceAddress(selection, { tool: "framework_op_stats", table: "framework_ops", sort_key: "total_self_time_us", query: name });
    expect(tableAddress(new URLSearchParams(address), "framework_ops").filter).toBe(name);
  });
  it("is the tool alone when the evidence names no table", () => {
    expect(evidenceAddress(selection, { tool: "trace_viewer", table: null, sort_key: null, query: "" })).toBe("?run=b%2Fsession+2&host=h1&tool=trace_viewer");
  });
});
