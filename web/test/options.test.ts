import { describe, expect, it } from "vitest";
import type { OptionInfo, ToolInfo } from "../src/api";
import { optionChoices, optionsFromParams, sameOptions, withOption } from "../src/state/options";
import { sameSelection } from "../src/state/url";

// op_profile's two options as the registry lists them (stepscope tools --format json).
const device: OptionInfo = { name: "device", type: "string", default: "", help: "", minimum: null, choices: ["all", "/host:CPU"], choices_from: "devices", resets: [] };
const topN: OptionInfo = { name: "top_n", type: "integer", default: 10, help: "", minimum: 1, choices: [], choices_from: null, resets: [] };
const opProfile: ToolInfo = { name: "op_profile", title: "Op profile", output: "tables", description: "", options: [device, topN] };

describe("tool options", () => {
  it("reads the tool's options from the address, leaving defaults and other parameters out", () => {
    const params = new URLSearchParams("run=r&host=h&tool=op_profile&top_n=10&device=all&start_ps=5");
    expect(optionsFromParams(opProfile, params)).toEqual({ device: "all" });
    expect(optionsFromParams(opProfile, new URLSearchParams("top_n=3"))).toEqual({ top_n: "3" });
    expect(optionsFromParams(undefined, params)).toEqual({});
  });
  it("offers the result's listed values, then the fixed choices, once each", () => {
    const data = { devices: ["/device:TPU:0", "/device:TPU:1", "all"] };
    expect(optionChoices(device, data)).toEqual(["/device:TPU:0", "/device:TPU:1", "all", "/host:CPU"]);
    expect(optionChoices(device, {})).toEqual(["all", "/host:CPU"]);
    expect(optionChoices(topN, data)).toEqual([]);
  });
  it("leaves the default out of the choices (the control lists it first, as the default)", () => {
    const all: OptionInfo = { ...device, default: "all", choices: ["all"] };
    expect(optionChoices(all, { devices: ["/device:TPU:0", "/device:TPU:1"] })).toEqual(["/device:TPU:0", "/device:TPU:1"]);
  });
  it("drops an option set back to its default", () => {
    expect(withOption({ top_n: "3" }, topN, "10")).toEqual({});
    expect(withOption({}, topN, "4")).toEqual({ top_n: "4" });
    expect(withOption({ device: "all", top_n: "4" }, device, "")).toEqual({ top_n: "4" });
  });
  it("clears the options a changed one resets (graph_viewer's op belongs to its program)", () => {
    const program: OptionInfo = { name: "program", type: "string", default: "", help: "", minimum: null, choices: [], choices_from: "program_names", resets: ["op"] };
    expect(withOption({ program: "a(1)", op: "fusion.3", hops: "1" }, program, "b(2)")).toEqual({ program: "b(2)", hops: "1" });
    expect(withOption({ program: "a(1)", op: "fusion.3" }, program, "")).toEqual({});
  });
  it("tells selections with other options apart", () => {
    expect(sameOptions({ a: "1", b: "2" }, { b: "2", a: "1" })).toBe(true);
    expect(sameOptions({ a: "1" }, {})).toBe(false);
    const base = { run: "r", host: "h", tool: "op_profile" };
    expect(sameSelection(base, { ...base, options: {} })).toBe(true);
    expect(sameSelection(base, { ...base, options: { top_n: "3" } })).toBe(false);
  });
});
