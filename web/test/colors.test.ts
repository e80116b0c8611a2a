import { describe, expect, it } from "vitest";
import { UNKNOWN_COLOR, opColor } from "../src/components/colors";

describe("op profile colour scale", () => {
  it("goes from red (poor) to green (good)", () => {
    expect(opColor(0)).toBe("hsl(0, 70%, 45%)");
    expect(opColor(0.5)).toBe("hsl(60, 70%, 45%)");
    expect(opColor(1)).toBe("hsl(120, 70%, 45%)");
  });
  it("clamps hints outside [0, 1]", () => {
    expect(opColor(-3)).toBe(opColor(0));
    expect(opColor(7)).toBe(opColor(1));
  });
  it("is grey when utilisation is unknown", () => {
    expect(opColor(null)).toBe(UNKNOWN_COLOR);
    expect(opColor(undefined)).toBe(UNKNOWN_COLOR);
    expect(opColor(Number.NaN)).toBe(UNKNOWN_COLOR);
  });
});
