/**
 * When the trace viewer asks the server for events. Frames never wait for it: the page draws
 * the last answer scaled to the current view and tells the scheduler what it would like
 * now (`want`). The scheduler
 *
 * - waits until the view has been still for `idleMs` (a pan or zoom in progress sends
 *   nothing), but not longer than `maxWaitMs` since the first unanswered wish while the view
 *   keeps moving (holding W still refreshes the picture a few times a second);
 * - keeps at most one request in flight: a newer one aborts the older (AbortController),
 *   and an answer that arrives for anything but the newest request is dropped;
 * - sends nothing when the newest request already asked for the same thing.
 */

export interface SchedulerClock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface SchedulerOptions<P, A> {
  fetch(params: P, signal: AbortSignal): Promise<A>;
  onAnswer(answer: A, params: P): void;
  onError(error: unknown, params: P): void;
  same(a: P, b: P): boolean;
  idleMs?: number;
  maxWaitMs?: number;
  clock?: SchedulerClock;
}

const REAL_CLOCK: SchedulerClock = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export class RequestScheduler<P, A> {
  /** Requests sent so far. */
  requests = 0;
  private wanted: P | null = null;
  /** The newest request sent (in flight or answered). */
  private sent: P | null = null;
  private controller: AbortController | null = null;
  private timer: unknown = null;
  private lastChange = 0;
  /** When the oldest wish not yet sent was made (null: none waits). */
  private waitingSince: number | null = null;
  private readonly idleMs: number;
  private readonly maxWaitMs: number;
  private readonly clock: SchedulerClock;
  private closed = false;

  constructor(private readonly options: SchedulerOptions<P, A>) {
    this.idleMs = options.idleMs ?? 50;
    this.maxWaitMs = options.maxWaitMs ?? 250;
    this.clock = options.clock ?? REAL_CLOCK;
  }

  /** Whether a request is on its way. */
  get busy(): boolean {
    return this.controller !== null;
  }

  /** The params of the newest request sent. */
  get latest(): P | null {
    return this.sent;
  }

  /** Asks for `params` (replacing any earlier wish); `now` skips the idle wait. */
  want(params: P, now = false): void {
    if (this.closed) return;
    const changed = !this.wanted || !this.options.same(this.wanted, params);
    this.wanted = params;
    if (this.sent && this.options.same(this.sent, params)) {
      this.disarm();
      this.waitingSince = null;
      return;
    }
    if (changed) this.lastChange = this.clock.now();
    if (this.waitingSince === null) this.waitingSince = this.clock.now();
    if (now) {
      this.disarm();
      this.send();
      return;
    }
    if (this.timer === null) this.arm(this.idleMs);
  }

  /** Stops everything: aborts the request in flight, sends nothing more. */
  close(): void {
    this.closed = true;
    this.disarm();
    this.controller?.abort();
    this.controller = null;
  }

  private arm(ms: number): void {
    this.timer = this.clock.setTimeout(() => {
      this.timer = null;
      this.tick();
    }, Math.max(0, ms));
  }

  private disarm(): void {
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  private tick(): void {
    if (this.closed || !this.wanted) return;
    if (this.sent && this.options.same(this.sent, this.wanted)) return;
    const now = this.clock.now();
    const still = now - this.lastChange;
    const waited = now - (this.waitingSince ?? now);
    if (still >= this.idleMs || waited >= this.maxWaitMs) {
      this.send();
      return;
    }
    this.arm(Math.min(this.idleMs - still, this.maxWaitMs - waited));
  }

  private send(): void {
    const params = this.wanted;
    if (!params) return;
    this.controller?.abort();
    const controller = new AbortController();
    this.controller = controller;
    this.sent = params;
    this.waitingSince = null;
    this.requests++;
    this.options.fetch(params, controller.signal).then(
      (answer) => {
        if (this.controller !== controller || this.closed) return;
        this.controller = null;
        this.options.onAnswer(answer, params);
        this.followUp();
      },
      (error: unknown) => {
        if (this.controller !== controller || this.closed || controller.signal.aborted) return;
        this.controller = null;
        // Not remembered as sent: the next wish asks again, even for the same thing.
        this.sent = null;
        this.options.onError(error, params);
      },
    );
  }

  /** The view moved on while the answer travelled: ask again (after the usual wait). */
  private followUp(): void {
    if (this.wanted && this.sent && !this.options.same(this.sent, this.wanted) && this.timer === null) this.arm(this.idleMs);
  }
}
