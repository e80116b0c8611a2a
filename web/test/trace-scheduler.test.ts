import { describe, expect, it } from "vitest";
import { RequestScheduler, type SchedulerClock } from "../src/trace/scheduler";

/** A clock whose time only moves when the test says so. */
class FakeClock implements SchedulerClock {
  time = 0;
  private timers: { at: number; callback: () => void; id: number }[] = [];
  private ids = 0;
  now(): number {
    return this.time;
  }
  setTimeout(callback: () => void, ms: number): unknown {
    const id = ++this.ids;
    this.timers.push({ at: this.time + ms, callback, id });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((timer) => timer.id !== handle);
  }
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at);
      const next = this.timers[0];
      if (!next || next.at > end) break;
      this.timers.shift();
      this.time = next.at;
      next.callback();
    }
    this.time = end;
  }
}

interface Pending {
  params: number;
  signal: AbortSignal;
  resolve: (answer: string) => void;
  reject: (error: unknown) => void;
}

function setup(idleMs = 50, maxWaitMs = 250) {
  const clock = new FakeClock();
  const sent: Pending[] = [];
  const answers: [string, number][] = [];
  const errors: unknown[] = [];
  const scheduler = new RequestScheduler<number, string>({
    fetch: (params, signal) =>
      new Promise<string>((resolve, reject) => {
        sent.push({ params, signal, resolve, reject });
        signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
      }),
    onAnswer: (answer, params) => answers.push([answer, params]),
    onError: (error) => errors.push(error),
    same: (a, b) => a === b,
    idleMs,
    maxWaitMs,
    clock,
  });
  return { clock, sent, answers, errors, scheduler };
}

const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

describe("request scheduling", () => {
  it("waits until the view is still, then sends the newest wish once", () => {
    const { clock, sent, scheduler } = setup();
    scheduler.want(1);
    clock.advance(20);
    scheduler.want(2);
    clock.advance(20);
    scheduler.want(3);
    clock.advance(49);
    expect(sent).toHaveLength(0);
    clock.advance(1);
    expect(sent.map((request) => request.params)).toEqual([3]);
    scheduler.want(3);
    clock.advance(500);
    expect(sent).toHaveLength(1);
    expect(scheduler.requests).toBe(1);
  });

  it("sends at once when asked to", () => {
    const { sent, scheduler } = setup();
    scheduler.want(7, true);
    expect(sent.map((request) => request.params)).toEqual([7]);
  });

  it("refreshes during a long movement, at most every maxWait", () => {
    const { clock, sent, scheduler } = setup();
    for (let frame = 0; frame < 60; frame++) {
      scheduler.want(frame);
      clock.advance(16);
    }
    // ~960 ms of motion: a request roughly every 250 ms, never one per frame.
    expect(sent.length).toBeGreaterThanOrEqual(3);
    expect(sent.length).toBeLessThanOrEqual(5);
  });

  it("keeps one request in flight: a newer one aborts it, the newest answer wins", async () => {
    const { clock, sent, answers, errors, scheduler } = setup();
    scheduler.want(1, true);
    scheduler.want(2, true);
    expect(sent[0]!.signal.aborted).toBe(true);
    expect(sent[1]!.signal.aborted).toBe(false);
    sent[0]!.resolve("old");
    sent[1]!.resolve("new");
    await settle();
    expect(answers).toEqual([["new", 2]]);
    expect(errors).toEqual([]);
    expect(scheduler.busy).toBe(false);
    clock.advance(100);
    expect(sent).toHaveLength(2);
  });

  it("asks again when the view moved on while the answer travelled", async () => {
    const { clock, sent, answers, scheduler } = setup(50, 10_000);
    scheduler.want(1, true);
    scheduler.want(2);
    clock.advance(10);
    sent[0]!.resolve("one");
    await settle();
    expect(answers).toEqual([["one", 1]]);
    clock.advance(60);
    expect(sent.map((request) => request.params)).toEqual([1, 2]);
  });

  it("reports failures and retries the same wish later", async () => {
    const { clock, sent, errors, scheduler } = setup();
    scheduler.want(4, true);
    sent[0]!.reject(new Error("boom"));
    await settle();
    expect(errors).toHaveLength(1);
    scheduler.want(4);
    clock.advance(60);
    expect(sent).toHaveLength(2);
  });

  it("stops everything when closed", async () => {
    const { clock, sent, answers, scheduler } = setup();
    scheduler.want(1, true);
    scheduler.close();
    expect(sent[0]!.signal.aborted).toBe(true);
    scheduler.want(2);
    clock.advance(1000);
    await settle();
    expect(sent).toHaveLength(1);
    expect(answers).toEqual([]);
  });
});
