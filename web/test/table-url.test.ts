import { describe, expect, it } from "vitest";
import { sameTableAddress, tableAddress, withTableAddress } from "../src/state/table-url";
import { keptParams } from "../src/state/url";

const params = (text: string): URLSearchParams => new URLSearchParams(text);

describe("a table's sort and search in the address", () => {
  it("reads this table's entries only", () => {
    const here = params("run=r&sort=ops:total_us:desc&sort=kernels:occurrences:asc&q=ops:conv");
    expect(tableAddress(here, "ops")).toEqual({
      sort: { key: "total_us", direction: "descending" },
      filter: "conv",
    });
    expect(tableAddress(here, "kernels")).toEqual({
      sort: { key: "occurrences", direction: "ascending" },
      filter: "",
    });
    expect(tableAddress(here, "steps")).toEqual({ sort: null, filter: "" });
  });
  it("keeps colons in the search text (only the first one ends the table name)", () => {
    expect(tableAddress(params("q=ops:aten::conv2d"), "ops").filter).toBe("aten::conv2d");
  });
  it("ignores a sort it cannot read", () => {
    for (const bad of ["ops:total_us:sideways", "ops:total_us", "ops::desc"]) {
      expect(tableAddress(params(`sort=${bad}`), "ops").sort).toBeNull();
    }
  });
  it("does not take another table whose name starts the same", () => {
    // "ops" must not read "ops_idle:...": the prefix includes the colon.
    expect(tableAddress(params("q=ops_idle:x"), "ops").filter).toBe("");
  });
  it("writes in place, keeps the other parameters, and drops what is empty", () => {
    const here = params("run=r&tool=t&q=ops:co&sort=kernels:name:asc&top_n=3");
    const next = withTableAddress(here, "ops", {
      sort: { key: "total_us", direction: "descending" },
      filter: "conv",
    });
    // q replaced where it was; the new sort goes last.
    expect(next.toString()).toBe("run=r&tool=t&q=ops%3Aconv&sort=kernels%3Aname%3Aasc&top_n=3&sort=ops%3Atotal_us%3Adesc");
    const cleared = withTableAddress(next, "ops", { sort: null, filter: "  " });
    expect(cleared.toString()).toBe("run=r&tool=t&sort=kernels%3Aname%3Aasc&top_n=3");
  });
  it("round-trips", () => {
    const state = {
      sort: { key: "self_time_us", direction: "ascending" as const },
      filter: "a:b c",
    };
    expect(tableAddress(withTableAddress(params(""), "ops", state), "ops")).toEqual(state);
  });
  it("compares states", () => {
    expect(sameTableAddress({ sort: null, filter: "" }, { sort: null, filter: "" })).toBe(true);
    expect(
      sameTableAddress(
        { sort: { key: "a", direction: "ascending" }, filter: "" },
        { sort: { key: "a", direction: "descending" }, filter: "" },
      ),
    ).toBe(false);
  });
  it("is kept by the address rules on a deep link to the same selection, dropped for another tool", () => {
    const search = "?run=r&host=h&tool=kernel_stats&sort=kernels%3Aoccurrences%3Adesc&q=kernels%3Agemm";
    const kept = keptParams(search, {
      run: "r",
      host: "h",
      tool: "kernel_stats",
    });
    expect(kept?.getAll("sort")).toEqual(["kernels:occurrences:desc"]);
    expect(kept?.getAll("q")).toEqual(["kernels:gemm"]);
    expect(keptParams(search, { run: "r", host: "h", tool: "overview_page" })).toBeUndefined();
  });
});
