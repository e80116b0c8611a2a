import { describe, expect, it } from "vitest";
import { CUT, MAX_RUN_LABEL, hostLabel, hostLabels, runLabels } from "../src/state/names";

describe("run labels", () => {
  it("keeps short names and names without folders whole", () => {
    // "tpu/2024_05_01_12_00_00" is 23 characters, within MAX_RUN_LABEL (24).
    expect("tpu/2024_05_01_12_00_00".length).toBeLessThanOrEqual(MAX_RUN_LABEL);
    const long = "x".repeat(MAX_RUN_LABEL + 1);
    expect(runLabels(["gpu", "tpu/2024_05_01_12_00_00", long])).toEqual(["gpu", "tpu/2024_05_01_12_00_00", long]);
  });
  it("shows the demo's two runs by the folder that tells them apart", () => {
    // Both longer than 24 characters; they differ first in component 0, so the rest is cut.
    const names = ["1-input-bound/2026_12_05_04_52_25", "2-parallel-input/2026_12_05_04_52_29"];
    expect(runLabels(names)).toEqual([`1-input-bound/${CUT}`, `2-parallel-input/${CUT}`]);
    // Under a shared folder beside other runs: "demo" differs from "gpu" and "tpu"
    // (component 0), the run folders from each other (component 1).
    const nested = ["demo/1-input-bound/2026_12_05_04_52_25", "demo/2-parallel-input/2026_12_05_04_52_29", "gpu", "tpu/2024_05_01_12_00_00"];
    expect(runLabels(nested).slice(0, 2)).toEqual([`demo/1-input-bound/${CUT}`, `demo/2-parallel-input/${CUT}`]);
  });
  it("leaves out the components no other run differs in", () => {
    // The same session folder: they differ first in component 1 (vision / text).
    const names = ["experiments/vision/resnet50/2024_05_01_12_00_00", "experiments/text/bert/2024_05_01_12_00_00"];
    expect(runLabels(names)).toEqual([`${CUT}/vision/${CUT}`, `${CUT}/text/${CUT}`]);
    // Two sessions of one run differ in the last component only; a third run in component 0.
    const sessions = ["resnet50_baseline/2024_05_01_12_00_00", "resnet50_baseline/2024_05_01_13_00_00", "bert/2024_05_01_12_00_00"];
    expect(runLabels(sessions)).toEqual(["resnet50_baseline/2024_05_01_12_00_00", "resnet50_baseline/2024_05_01_13_00_00", "bert/2024_05_01_12_00_00"]);
    expect(runLabels(sessions.slice(0, 2))).toEqual([`${CUT}/2024_05_01_12_00_00`, `${CUT}/2024_05_01_13_00_00`]);
  });
  it("keeps a name whole where it is a prefix of another", () => {
    // "a_long_experiment_folder/run" (28) is the start of the other: no component of its own.
    expect(runLabels(["a_long_experiment_folder/run", "a_long_experiment_folder/run/2024_05_01_12_00_00"])[0]).toBe("a_long_experiment_folder/run");
  });
});

describe("host labels", () => {
  it("drops torch's timestamp suffix", () => {
    // <worker>.<ms since epoch> from tensorboard_trace_handler; 10 digits is seconds.
    expect(hostLabels(["worker0.1700000000000", "worker1.1700000000"])).toEqual(["worker0", "worker1"]);
  });
  it("drops the profile file's extensions", () => {
    // rank0.pt.trace.json.gz in a session folder is host "rank0.pt" (the server strips .trace.json.gz).
    expect(hostLabels(["rank0.pt", "rank1.pt"])).toEqual(["rank0", "rank1"]);
    expect(["a.xplane.pb", "b.pt.trace.json.gz", "c.trace.json", "d.json.gz", "e.pftrace", "w.1700000000000.pt"].map(hostLabel)).toEqual(["a", "b", "c", "d", "e", "w"]);
  });
  it("leaves other names alone", () => {
    // An address's last part and a short number are no timestamp.
    expect(hostLabels(["10.0.0.1", "tpu_host", "rank3", "job.123", ".pt"])).toEqual(["10.0.0.1", "tpu_host", "rank3", "job.123", ".pt"]);
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
