import { describe, expect, it } from "vitest";
import { basePromptText, compareAddress } from "../src/pages/diff_pick";

describe("the compare view without a base", () => {
  it("links each candidate to the compare view's own address", () => {
    expect(compareAddress({ run: "tpu/s", host: "tpu_host" }, { run: "gpu", host: "alexnet_small" })).toBe(
      "?run=tpu%2Fs&host=tpu_host&tool=diff&base_run=gpu&base_host=alexnet_small",
    );
  });
  it("says why there is no diff: none named, or the named one is not there", () => {
    expect(basePromptText(null)).toBe('Compare needs a base: pick the run to compare this one with, here or in "Compare with…" above.');
    expect(basePromptText({ run: "nope", host: "x" })).toBe(
      'There is no run/host nope · x in this log directory. Compare needs a base: pick the run to compare this one with, here or in "Compare with…" above.',
    );
  });
});
