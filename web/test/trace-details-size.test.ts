import { describe, expect, it } from "vitest";
import {
  clampHeight,
  DETAILS_DEFAULT_PX,
  DETAILS_MIN_PX,
  detailsBounds,
  keyHeight,
  KEY_STEP_PX,
  loadDetailsHeight,
  PAGE_STEP_PX,
  parseHeight,
  saveDetailsHeight,
  STORAGE_KEY,
  TIMELINE_MIN_PX,
} from "../src/trace/details_size";

/** A Storage's two methods over a Map (the browser test uses the real localStorage). */
class MemoryStore {
  readonly items = new Map<string, string>();
  getItem(key: string): string | null {
    return this.items.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    this.items.set(key, value);
  }
}

describe("the details pane's height", () => {
  it("leaves the timeline its minimum of the room the two share", () => {
    // 700 px shared: the pane may take 700 - 200 = 500 px.
    expect(detailsBounds(700)).toEqual({ min: 80, max: 500 });
    expect(TIMELINE_MIN_PX).toBe(200);
    expect(DETAILS_MIN_PX).toBe(80);
    // Too little room for both: the pane keeps its own minimum rather than vanish.
    expect(detailsBounds(250)).toEqual({ min: 80, max: 80 });
    expect(detailsBounds(640.6)).toEqual({ min: 80, max: 440 });
  });

  it("is clamped to the bounds, in whole px", () => {
    const bounds = { min: 80, max: 500 };
    expect(clampHeight(10, bounds)).toBe(80);
    expect(clampHeight(800, bounds)).toBe(500);
    expect(clampHeight(250.4, bounds)).toBe(250);
    expect(clampHeight(Number.NaN, bounds)).toBe(80);
  });

  it("moves with the arrow keys (up grows it), by pages, and to either end", () => {
    const bounds = { min: 80, max: 500 };
    expect(keyHeight("ArrowUp", 190, bounds)).toBe(190 + KEY_STEP_PX);
    expect(keyHeight("ArrowDown", 190, bounds)).toBe(190 - KEY_STEP_PX);
    expect(keyHeight("PageUp", 190, bounds)).toBe(190 + PAGE_STEP_PX);
    expect(keyHeight("PageDown", 190, bounds)).toBe(190 - PAGE_STEP_PX);
    expect(keyHeight("Home", 190, bounds)).toBe(500);
    expect(keyHeight("End", 190, bounds)).toBe(80);
    // At a bound, a key keeps it there.
    expect(keyHeight("ArrowUp", 495, bounds)).toBe(500);
    expect(keyHeight("ArrowDown", 85, bounds)).toBe(80);
    // Keys it does not handle are left to the timeline.
    expect(keyHeight("w", 190, bounds)).toBeNull();
    expect(keyHeight("ArrowLeft", 190, bounds)).toBeNull();
  });

  it("reads back only a positive number of px", () => {
    expect(parseHeight("320")).toBe(320);
    expect(parseHeight("320.5")).toBe(320.5);
    for (const text of [null, "", "0", "-5", "abc", "12px", "1e3", "[320]"]) expect(parseHeight(text)).toBeNull();
  });

  it("is remembered, and the default comes back for nothing or junk stored", () => {
    const store = new MemoryStore();
    expect(loadDetailsHeight(store)).toBe(DETAILS_DEFAULT_PX);
    saveDetailsHeight(333.4, store);
    expect(store.items.get(STORAGE_KEY)).toBe("333");
    expect(loadDetailsHeight(store)).toBe(333);
    store.setItem(STORAGE_KEY, "tall");
    expect(loadDetailsHeight(store)).toBe(DETAILS_DEFAULT_PX);
    // No storage (disabled), or storage that throws: the default, and saving does nothing.
    expect(loadDetailsHeight(null)).toBe(DETAILS_DEFAULT_PX);
    const broken = {
      getItem: (): string | null => {
        throw new Error("denied");
      },
      setItem: (): void => {
        throw new Error("full");
      },
    };
    expect(loadDetailsHeight(broken)).toBe(DETAILS_DEFAULT_PX);
    expect(() => saveDetailsHeight(200, broken)).not.toThrow();
  });
});
