import { describe, expect, it } from "vitest";
import {
  MISSING,
  formatBytes,
  formatCount,
  formatNumber,
  formatPercent,
  formatRatio,
  formatDurationNs,
  formatTimeMs,
  formatTimePs,
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
  // Each expectation is the value divided by the unit's size in us (ns = 0.001, ms = 1000,
  // s = 1e6), written with two decimals.
  it("writes zero in the key's unit, not as 0.00", () => {
    expect(formatTimeUs(0)).toBe("0 us");
    expect(formatTimeMs(0)).toBe("0 ms");
    expect(formatTimePs(0)).toBe("0 ns");
  });
  it("writes sub-microsecond times in ns", () => {
    // 0.0004 us = 0.4 ns; 0.25 us = 250 ns.
    expect(formatTimeUs(0.0004)).toBe("0.40 ns");
    expect(formatTimeUs(0.25)).toBe("250.00 ns");
    // 1e-6 us = 0.001 ns, below two decimals: two significant digits.
    expect(formatTimeUs(1e-6)).toBe("0.0010 ns");
  });
  it("writes microseconds in us below a millisecond", () => {
    expect(formatTimeUs(850.2)).toBe("850.20 us");
    expect(formatTimeUs(999.9)).toBe("999.90 us");
  });
  it("moves to the next unit at 1000 and where rounding reaches 1000", () => {
    expect(formatTimeUs(1000)).toBe("1.00 ms");
    // 999.999 us rounds to 1000.00 us, which is 1.00 ms.
    expect(formatTimeUs(999.999)).toBe("1.00 ms");
    expect(formatTimeUs(78828.1616)).toBe("78.83 ms");
  });
  it("writes seconds from 1 s, grouped beyond 1,000 s", () => {
    // 59 s = 59e6 us.
    expect(formatTimeUs(59e6)).toBe("59.00 s");
    expect(formatTimeUs(98153063.5)).toBe("98.15 s");
    // 3,600 s = one hour, 3.6e9 us.
    expect(formatTimeUs(3.6e9)).toBe("3,600.00 s");
  });
  it("keeps the sign, choosing the unit by size", () => {
    expect(formatTimeUs(-1500)).toBe("-1.50 ms");
    expect(formatTimeUs(-0.5)).toBe("-500.00 ns");
  });
  it("never shows a negative zero", () => {
    // -0.00001 us = -0.01 ns: still two decimals, not rounded to a signed zero.
    expect(formatTimeUs(-0.00001)).toBe("-0.01 ns");
    expect(formatDurationNs(-0)).toBe("0 us");
  });
  it("writes the input pipeline's milliseconds and exact picoseconds the same way", () => {
    expect(formatTimeMs(8.522)).toBe("8.52 ms");
    // 12,345.6 ms = 12.3456 s.
    expect(formatTimeMs(12345.6)).toBe("12.35 s");
    expect(formatTimeMs(0.0005)).toBe("500.00 ns");
    // 805,338,000 ps = 805.338 us.
    expect(formatTimePs(805338000)).toBe("805.34 us");
  });
  it("shows a dash for null, NaN and infinities", () => {
    for (const f of [formatTimeUs, formatTimeMs, formatTimePs]) {
      expect(f(null)).toBe(MISSING);
      expect(f(undefined)).toBe(MISSING);
      expect(f(Number.NaN)).toBe(MISSING);
      expect(f(Number.POSITIVE_INFINITY)).toBe(MISSING);
    }
  });
  it("formats by key suffix", () => {
    expect(kindOfKey("total_duration_ps")).toBe("time_ps");
    expect(formatValue("avg_duration_us", 0.0004)).toBe("0.40 ns");
    expect(formatValue("self_time_ms", 1500)).toBe("1.50 s");
    expect(formatValue("total_duration_ps", 1500)).toBe("1.50 ns");
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
