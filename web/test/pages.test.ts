import { describe, expect, it } from "vitest";
import type { ApiTable, OpProfile } from "../src/api";
import { findNode, nodePath, shareOf } from "../src/pages/op_profile";
import { opsView } from "../src/pages/framework_op_stats";
import { evidenceLinkText } from "../src/pages/overview_page";
import { PAGES, pageFor } from "../src/pages";
import { genericPage } from "../src/pages/generic";
import opJson from "./fixtures/op_profile_tpu.json";

const op = opJson as unknown as OpProfile;

describe("op profile tree", () => {
  it("finds nodes by their path of names", () => {
    const program = op.root.children[0]!;
    const category = program.children[0]!;
    expect(findNode(op.root, [op.root.name])).toBe(op.root);
    expect(findNode(op.root, [op.root.name, program.name, category.name])).toBe(category);
    expect(findNode(op.root, [op.root.name, "nope"])).toBeNull();
    expect(nodePath([op.root.name, program.name])).toBe(`${op.root.name} / ${program.name}`);
  });
  it("switches share with the exclude-idle setting", () => {
    expect(shareOf(op.root, true)).toBe(op.root.time_percent);
    expect(shareOf(op.root, false)).toBe(op.root.time_percent_with_idle);
  });
});

describe("framework op table with and without idle", () => {
  const columns = ["rank", "type", "self_time_percent", "cumulative_self_time_percent", "self_time_percent_with_idle"].map((key) => ({
    key,
    label: key,
    kind: key === "type" ? "string" : "number",
  }));
  const ops: ApiTable = { name: "framework_ops", columns, rows: [[1, "conv", 60, 60, 40], [2, "add", 40, 100, 27]] };
  const idle: ApiTable = { name: "idle", columns, rows: [[0, "IDLE", null, null, 33]] };
  it("shows shares of op time without idle", () => {
    const view = opsView(ops, idle, false);
    expect(view.rows).toHaveLength(2);
    expect(view.columns.map((column) => column.key)).toEqual(["rank", "type", "self_time_percent", "cumulative_self_time_percent"]);
  });
  it("adds the IDLE rows and shares including idle with idle", () => {
    const view = opsView(ops, idle, true);
    expect(view.name).toBe("framework_ops");
    expect(view.rows.map((row) => row[1])).toEqual(["conv", "add", "IDLE"]);
    expect(view.columns.map((column) => column.key)).toEqual(["rank", "type", "self_time_percent_with_idle"]);
  });
});

describe("page registry", () => {
  it("has a page per tool (and the compare and distributed views') and a generic one for the rest", () => {
    expect(Object.keys(PAGES)).toEqual([
      "overview_page",
      "input_pipeline_analyzer",
      "framework_op_stats",
      "kernel_stats",
      "op_profile",
      "memory_profile",
      "memory_viewer",
      "roofline_model",
      "hlo_stats",
      "graph_viewer",
      "flame_graph",
      "critical_path",
      "trace_viewer",
      "diff",
      "distributed",
    ]);
    expect(pageFor("some_future_tool")).toBe(genericPage);
  });
  it("lets the trace viewer load its own data", () => {
    expect(pageFor("trace_viewer").mount).toBeTypeOf("function");
    expect(pageFor("trace_viewer").tables).toBe(false);
    expect(pageFor("overview_page").mount).toBeUndefined();
  });
  it("opens the paired trace view for the compare tool's pair option", () => {
    expect(pageFor("diff", { base_run: "a", base_host: "h", pair: "3" }).mount).toBeTypeOf("function");
    expect(pageFor("diff", { base_run: "a", base_host: "h" })).toBe(PAGES.diff);
    expect(pageFor("diff")).toBe(PAGES.diff);
  });
});

describe("an evidence link's text", () => {
  it("names the tool and the op it searches for, cut to 60 characters", () => {
    expect(evidenceLinkText({ tool: "framework_op_stats", table: "framework_ops", sort_key: "total_self_time_us", query: "aten::conv2d" })).toBe("Framework op stats: aten::conv2d");
    const long = "x".repeat(70);
    // 59 characters of the name and an ellipsis: 60 in all.
    expect(evidenceLinkText({ tool: "framework_op_stats", table: "framework_ops", sort_key: "total_self_time_us", query: long })).toBe(`Framework op stats: ${"x".repeat(59)}…`);
  });
  it("names the table and its sort when it keeps every row, the tool alone without a table", () => {
    expect(evidenceLinkText({ tool: "input_pipeline_analyzer", table: "steps", sort_key: "input_percent", query: "" })).toBe("Input pipeline analyzer: steps by input percent, largest first");
    expect(evidenceLinkText({ tool: "trace_viewer", table: null, sort_key: null, query: "" })).toBe("Trace viewer");
  });
});
