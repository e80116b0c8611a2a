import { describe, expect, it } from "vitest";
import { withoutColumns } from "../src/components/table";
import { rawAttr } from "../src/format";
import { reviver, setSource, sourceOf } from "../src/rawjson";

/** JSON.parse as a browser with source text access calls the reviver (Node 20 has none). */
function parseWithSources(text: string, sources: Record<string, string>): unknown {
  return JSON.parse(text, function (this: unknown, key: string, value: unknown) {
    return reviver.call(this, key, value, key in sources ? { source: sources[key] } : undefined);
  });
}

describe("numbers' JSON text", () => {
  it("keeps the text of numbers JavaScript would write differently", () => {
    const data = parseWithSources('{"mean": 43458933.0, "count": 5, "tiny": 1e-05}', { mean: "43458933.0", count: "5", tiny: "1e-05" }) as Record<string, number>;
    expect(data.mean).toBe(43458933);
    expect(rawAttr(data.mean, data, "mean")).toBe("43458933.0");
    expect(rawAttr(data.tiny, data, "tiny")).toBe("1e-05");
    expect(sourceOf(data, "count")).toBeUndefined();
    expect(rawAttr(data.count, data, "count")).toBe("5");
  });
  it("falls back to String() where the browser gives no source", () => {
    const data = JSON.parse('{"mean": 43458933.0}', reviver) as Record<string, number>;
    expect(rawAttr(data.mean, data, "mean")).toBe(String(data.mean));
  });
  it("follows a cell into a table view without some columns", () => {
    const row = ["conv", 1, 35000];
    setSource(row, 2, "35000.0");
    const view = withoutColumns(
      {
        name: "t",
        columns: [
          { key: "name", label: "Name", kind: "string" },
          { key: "rank", label: "Rank", kind: "number" },
          { key: "total_us", label: "Total", kind: "number" },
        ],
        rows: [row],
      },
      ["rank"],
    );
    expect(rawAttr(view.rows[0]![1], view.rows[0], 1)).toBe("35000.0");
  });
});
