import { describe, expect, it } from "vitest";
import { withoutColumns } from "../src/components/table";
import { rawAttr } from "../src/format";
import { exactText, reviver, setSource, sourceOf } from "../src/rawjson";

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
  it("writes uint64 ids past 2^53 with every digit, nested too", () => {
    // XLA's program_id on the shared TPU trace; a JavaScript number keeps 12190760917235804000.
    const text = '{"stat": {"value": 12190760917235803885}, "list": {"value": [1, 9007199254740993]}, "plain": {"value": {"a": 2.5, "b": "x"}}}';
    const data = parseWithSources(text, { value: "12190760917235803885" }) as Record<string, { value: unknown }>;
    expect(String(data.stat!.value)).toBe("12190760917235804000");
    expect(exactText(data.stat!, "value")).toBe("12190760917235803885");
    // Array items are revived under their index ("1"), which carries the source here.
    const list = JSON.parse('[1, 9007199254740993]', function (this: unknown, key: string, value: unknown) {
      return reviver.call(this, key, value, key === "1" ? { source: "9007199254740993" } : undefined);
    }) as number[];
    expect(exactText({ value: list }, "value")).toBe("[1,9007199254740993]");
    expect(exactText(data.plain!, "value")).toBe('{"a":2.5,"b":"x"}');
  });
});
