import { describe, expect, it } from "vitest";
import { CUT_PREFIX, MAX_RUN_LABEL, hostLabels, runLabels } from "../src/state/names";

describe("run labels", () => {
  it("keeps short names and names without folders whole", () => {
    // "tpu/2024_05_01_12_00_00" is 23 characters, within MAX_RUN_LABEL (24).
    expect("tpu/2024_05_01_12_00_00".length).toBeLessThanOrEqual(MAX_RUN_LABEL);
    const long = "x".repeat(MAX_RUN_LABEL + 1);
    expect(runLabels(["gpu", "tpu/2024_05_01_12_00_00", long])).toEqual(["gpu", "tpu/2024_05_01_12_00_00", long]);
  });
  it("shows a long name by its last folder", () => {
    // The session folder is the last component; nothing else ends with it.
    expect(runLabels(["experiments/vision/resnet50/2024_05_01_12_00_00", "gpu"])).toEqual([`${CUT_PREFIX}2024_05_01_12_00_00`, "gpu"]);
  });
  it("keeps as many folders as it takes to tell runs apart", () => {
    // Both end in the same session folder; one more component (resnet50 / bert) differs.
    const names = ["experiments/vision/resnet50/2024_05_01_12_00_00", "experiments/text/bert/2024_05_01_12_00_00"];
    expect(runLabels(names)).toEqual([`${CUT_PREFIX}resnet50/2024_05_01_12_00_00`, `${CUT_PREFIX}bert/2024_05_01_12_00_00`]);
    // A short run named exactly like the long one's tail: the long one keeps one more folder.
    expect(runLabels(["experiments/vision/resnet50/session_one", "session_one"])[0]).toBe(`${CUT_PREFIX}resnet50/session_one`);
  });
});

describe("host labels", () => {
  it("drops torch's timestamp suffix", () => {
    // <worker>.<ms since epoch> from tensorboard_trace_handler; 10 digits is seconds.
    expect(hostLabels(["worker0.1700000000000", "worker1.1700000000"])).toEqual(["worker0", "worker1"]);
  });
  it("leaves other names alone", () => {
    // An address's last part and a short number are no timestamp.
    expect(hostLabels(["10.0.0.1", "tpu_host", "rank3", "job.123"])).toEqual(["10.0.0.1", "tpu_host", "rank3", "job.123"]);
  });
  it("keeps full names where the short ones would be the same", () => {
    // Two captures of worker0 in one folder, and one of worker1.
    expect(hostLabels(["worker0.1700000000000", "worker0.1700000500000", "worker1.1700000000000"])).toEqual([
      "worker0.1700000000000",
      "worker0.1700000500000",
      "worker1",
    ]);
  });
});
