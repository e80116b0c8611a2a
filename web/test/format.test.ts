import { describe, expect, it } from "vitest";
import {
  MISSING,
  formatBytes,
  formatCount,
  formatNumber,
  formatPercent,
  formatRatio,
  formatTimeMs,
  formatTimeUs,
  formatValue,
  groupThousands,
  humanize,
  kindOfKey,
  rawAttr,
} from "../src/format";

describe("groupThousands", () => {
  it("groups the whole part only", () => {
    expect(groupThousands("1234567")).toBe("1,234,567");
    expect(groupThousands("-1234.5678")).toBe("-1,234.5678");
    expect(groupThousands("999")).toBe("999");
    expect(groupThousands("12.5 ms")).toBe("12.5 ms");
  });
});

describe("times", () => {
  it("writes microseconds in us below a millisecond", () => {
    expect(formatTimeUs(850.2)).toBe("850.20 us");
    expect(formatTimeUs(0)).toBe("0.00 us");
  });
  it("writes milliseconds from 1 ms, with separators from 1 s", () => {
    expect(formatTimeUs(1000)).toBe("1.00 ms");
    expect(formatTimeUs(78828.1616)).toBe("78.83 ms");
    expect(formatTimeUs(98153063.5)).toBe("98,153.1 ms");
  });
  it("never shows a negative zero", () => {
    expect(formatTimeUs(-0.001)).toBe("0.00 us");
  });
  it("writes the input pipeline's milliseconds", () => {
    expect(formatTimeMs(8.522)).toBe("8.522 ms");
    expect(formatTimeMs(12345.6)).toBe("12,345.600 ms");
  });
});

describe("percentages, bytes, counts", () => {
  it("gives percentages one decimal", () => {
    expect(formatPercent(44.78296627970526)).toBe("44.8%");
    expect(formatPercent(100)).toBe("100.0%");
    expect(formatRatio(0.5)).toBe("50.0%");
  });
  it("uses binary units for bytes", () => {
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(57803520)).toBe("55.13 MiB");
    expect(formatBytes(2791505408)).toBe("2.60 GiB");
    expect(formatBytes(1024)).toBe("1.00 KiB");
  });
  it("groups counts", () => {
    expect(formatCount(6095)).toBe("6,095");
    expect(formatCount(1234567890123)).toBe("1,234,567,890,123");
  });
  it("writes other numbers with two decimals, tiny ones with three digits", () => {
    expect(formatNumber(164.2612)).toBe("164.26");
    expect(formatNumber(0.000562)).toBe("0.000562");
    expect(formatNumber(918)).toBe("918");
  });
  it("shows a dash for what the profile cannot say", () => {
    for (const f of [formatTimeUs, formatPercent, formatBytes, formatCount, formatNumber]) {
      expect(f(null)).toBe(MISSING);
      expect(f(Number.NaN)).toBe(MISSING);
    }
  });
});

describe("formatting by key", () => {
  it("reads the unit from the key", () => {
    expect(kindOfKey("step_time_mean_us")).toBe("time_us");
    expect(kindOfKey("self_ms")).toBe("time_ms");
    expect(kindOfKey("input_percent_mean")).toBe("percent");
    expect(kindOfKey("occupancy_pct")).toBe("percent");
    expect(kindOfKey("peak_allocated_bytes")).toBe("bytes");
    expect(kindOfKey("flops_utilization")).toBe("ratio");
    expect(kindOfKey("occurrences")).toBe("count");
    expect(kindOfKey("gflops_per_second")).toBe("number");
    expect(kindOfKey("name", "string")).toBe("string");
  });
  it("formats values by key, strings and booleans as they are", () => {
    expect(formatValue("device_busy_percent", 79.0201116896506)).toBe("79.0%");
    expect(formatValue("step_count", 5)).toBe("5");
    expect(formatValue("step_source", "ProfilerStep")).toBe("ProfilerStep");
    expect(formatValue("is_kernel_using_tensor_core", true, "bool")).toBe("yes");
    expect(formatValue("bound_by", null, "string")).toBe(MISSING);
  });
  it("keeps the raw value for data-value", () => {
    expect(rawAttr(25.59387699000248)).toBe("25.59387699000248");
    expect(rawAttr(null)).toBe("null");
    expect(rawAttr("x")).toBe("x");
    expect(rawAttr(false)).toBe("false");
  });
  it("makes labels of keys", () => {
    expect(humanize("device_compute_us")).toBe("Device compute");
    expect(humanize("host_to_device")).toBe("Host to device");
  });
});
