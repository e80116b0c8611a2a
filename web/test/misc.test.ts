import { afterEach, describe, expect, it, vi } from "vitest";
import { ApiError, Cancelled, getToolJson, type CaptureStatus, type Pending } from "../src/api";
import { captureOutcome, captureRequest, parseAddresses } from "../src/capture";
import { pendingText, percentOf } from "../src/components/progress";

describe("progress", () => {
  it("shows the server's message and a whole percentage", () => {
    expect(pendingText({ state: "analysing", progress: 0.4, message: "analysing…" })).toBe("analysing… 40%");
    expect(pendingText({ state: "queued", progress: 0, message: "" })).toBe("queued… 0%");
  });
  it("clamps progress", () => {
    expect(percentOf(1.7)).toBe(100);
    expect(percentOf(-1)).toBe(0);
    expect(percentOf(Number.NaN)).toBe(0);
  });
});

describe("capture form", () => {
  const form = { addresses: "localhost:9012, worker1:9012", duration: "2000", hostLevel: "2", pythonLevel: "0", deviceLevel: "1", delay: "0", attempts: "3" };
  it("splits addresses on commas and spaces", () => {
    expect(parseAddresses(" a:1,b:2  c:3 ,, ")).toEqual(["a:1", "b:2", "c:3"]);
  });
  it("builds the documented POST body", () => {
    expect(captureRequest(form)).toEqual({
      addresses: ["localhost:9012", "worker1:9012"],
      duration_ms: 2000,
      host_tracer_level: 2,
      python_tracer_level: 0,
      device_tracer_level: 1,
      delay_ms: 0,
      attempts: 3,
    });
  });
  it("refuses what the server would refuse", () => {
    expect(() => captureRequest({ ...form, addresses: "" })).toThrow(/address/);
    expect(() => captureRequest({ ...form, addresses: "localhost" })).toThrow(/host:port/);
    expect(() => captureRequest({ ...form, hostLevel: "4" })).toThrow(/host tracer level/);
    expect(() => captureRequest({ ...form, duration: "1.5" })).toThrow(/duration/);
  });
});

describe("capture outcome", () => {
  const status = (state: CaptureStatus["state"], run: string | null, ok: boolean): CaptureStatus => ({
    id: "c1",
    state,
    elapsed_ms: 700,
    duration_ms: 600,
    run,
    results: state === "running" ? [] : [{ address: "127.0.0.1:9012", ok, host: ok ? "127.0.0.1_9012" : null, message: ok ? "ok" : "connection refused", attempts: 1 }],
  });
  it("polls while the capture runs", () => {
    expect(captureOutcome(status("running", null, false))).toEqual({ kind: "poll" });
  });
  it("opens the run a finished capture wrote", () => {
    expect(captureOutcome(status("done", "plugins/profile/2025_01_01_00_00_00", true))).toEqual({ kind: "open", run: "plugins/profile/2025_01_01_00_00_00" });
  });
  it("stays open on the per-host messages when the capture failed or wrote no run", () => {
    expect(captureOutcome(status("failed", null, false))).toEqual({ kind: "stay" });
    expect(captureOutcome(status("done", null, false))).toEqual({ kind: "stay" });
    expect(captureOutcome(status("done", "", false))).toEqual({ kind: "stay" });
  });
});

function respond(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}

describe("polling the tool data", () => {
  const selection = { run: "r", host: "h", tool: "overview_page" };
  afterEach(() => {
    vi.unstubAllGlobals();
    vi.useRealTimers();
  });

  it("asks again on 202 until the data is ready, reporting progress", async () => {
    vi.useFakeTimers();
    const answers = [respond(202, { state: "analysing", progress: 0.25, message: "x" }), respond(202, { state: "analysing", progress: 0.5, message: "x" }), respond(200, { ok: 1 })];
    const fetch = vi.fn<(url: string) => Promise<Response>>(() => Promise.resolve(answers.shift()!));
    vi.stubGlobal("fetch", fetch);
    const seen: Pending[] = [];
    const result = getToolJson("data", selection, (pending) => seen.push(pending), new AbortController().signal);
    await vi.runAllTimersAsync();
    await expect(result).resolves.toEqual({ ok: 1 });
    expect(seen.map((pending) => pending.progress)).toEqual([0.25, 0.5]);
    expect(fetch).toHaveBeenCalledTimes(3);
    expect(fetch.mock.calls[0]![0]).toBe("api/data?run=r&host=h&tool=overview_page");
  });

  it("turns 4xx answers into errors carrying the server's message", async () => {
    vi.stubGlobal("fetch", vi.fn(() => Promise.resolve(respond(422, { error: "x.pb: not an XSpace" }))));
    const result = getToolJson("tables", selection, () => {}, new AbortController().signal);
    await expect(result).rejects.toBeInstanceOf(ApiError);
    await expect(getToolJson("tables", selection, () => {}, new AbortController().signal)).rejects.toThrow("x.pb: not an XSpace");
  });

  it("stops polling when the selection is abandoned", async () => {
    vi.useFakeTimers();
    const fetch = vi.fn(() => Promise.resolve(respond(202, { state: "queued", progress: 0, message: "" })));
    vi.stubGlobal("fetch", fetch);
    const controller = new AbortController();
    const result = getToolJson("data", selection, () => controller.abort(), controller.signal);
    const settled = expect(result).rejects.toBeInstanceOf(Cancelled);
    await vi.runAllTimersAsync();
    await settled;
    expect(fetch).toHaveBeenCalledTimes(1);
  });
});
