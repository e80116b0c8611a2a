import { describe, expect, it } from "vitest";
import type { ToolInfo } from "../src/api";
import { NO_BASE, toolMenu, whyNot } from "../src/state/availability";
import { COMPARE_TOOL } from "../src/state/compare";

const tool = (name: string): ToolInfo => ({ name, title: name, output: "tables", description: "", options: [] });

describe("tool menu", () => {
  it("keeps the server's reasons and adds the compare view's", () => {
    const answer = { tools: [tool("kernel_stats")], unavailable: { kernel_stats: "no GPU kernels" }, checked: true };
    const tools = [...answer.tools, tool(COMPARE_TOOL)];
    // One profile in the log directory: nothing to compare with.
    const alone = toolMenu(answer, tools, 1);
    expect(alone.unavailable).toEqual({ kernel_stats: "no GPU kernels", [COMPARE_TOOL]: NO_BASE });
    expect(whyNot(alone, "kernel_stats")).toBe("no GPU kernels");
    // Two profiles: compare applies; the answer itself is not changed.
    expect(whyNot(toolMenu(answer, tools, 2), COMPARE_TOOL)).toBe("");
    expect(answer.unavailable).toEqual({ kernel_stats: "no GPU kernels" });
  });
  it("says nothing before the server checked, or of an unknown menu", () => {
    expect(whyNot(toolMenu({ tools: [], unavailable: {}, checked: false }, [], 3), "kernel_stats")).toBe("");
    expect(whyNot(undefined, "kernel_stats")).toBe("");
  });
});
