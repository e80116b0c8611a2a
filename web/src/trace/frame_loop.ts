/**
 * The trace viewer's frames: requestAnimationFrame only, at most one pending. A frame
 * first moves the view for held keys (timing the gaps between animated frames), then
 * draws: the scene (timed into frameTimes), the drawn count on the canvas, the hover when
 * the pointer moved or the view moved under a shown tooltip, then a data check when the
 * view, scroll, size or filter changed since the last one.
 */

import { moved, type HeldKeys } from "./gestures";
import type { Prepared } from "./model";
import type { HoverView } from "./panels";
import type { Renderer } from "./render";
import type { TimeRange } from "./timeline";
import type { ViewState } from "./view_state";

export const MAX_FRAME_SAMPLES = 5000;
/** The longest step an animated frame moves by (a stalled tab does not jump). */
export const MAX_STEP_S = 0.05;

/** What the frames draw with and into. */
export interface FrameParts {
  state: ViewState;
  held: Pick<HeldKeys, "size" | "motion">;
  renderer: Pick<Renderer, "draw" | "stats">;
  hover: Pick<HoverView, "shown" | "setCursor" | "show" | "hide">;
  canvas: Pick<Element, "setAttribute">;
}

/** What the frames ask of the viewer. */
export interface FrameClient {
  /** The answer drawn (null before the first). */
  prepared(): Prepared | null;
  /** Whether a drag is in progress (no tooltip meanwhile). */
  dragging(): boolean;
  /** Moves the view (held keys). */
  setView(view: TimeRange): void;
  /** Asks for data when the screen needs it. */
  checkData(): void;
  /** After every drawn frame. */
  drawn(): void;
}

export interface FrameClock {
  now(): number;
  request(callback: (now: number) => void): number;
  cancel(handle: number): void;
}

const BROWSER_CLOCK: FrameClock = {
  now: () => performance.now(),
  request: (callback) => requestAnimationFrame(callback),
  cancel: (handle) => cancelAnimationFrame(handle),
};

function keepNewest(samples: number[], value: number): void {
  samples.push(value);
  if (samples.length > MAX_FRAME_SAMPLES) samples.splice(0, samples.length - MAX_FRAME_SAMPLES);
}

export class FrameLoop {
  /** Milliseconds each drawn frame took to paint (the newest last). */
  readonly frameTimes: number[] = [];
  /** Milliseconds between consecutive animated frames. */
  readonly frameIntervals: number[] = [];
  private handle = 0;
  private lastFrame = 0;
  private dataDirty = true;
  private hoverDirty = false;
  private lastDrawnEvents = -1;
  private closed = false;

  constructor(
    private readonly parts: FrameParts,
    private readonly client: FrameClient,
    private readonly clock: FrameClock = BROWSER_CLOCK,
  ) {}

  /** A frame soon (one at most). */
  request(): void {
    if (!this.handle && !this.closed) this.handle = this.clock.request((now) => this.onFrame(now));
  }

  /** The data may no longer cover the screen: check after the next draw (which this does not ask for). */
  markData(): void {
    this.dataDirty = true;
  }

  /** The view, scroll or filter changed: a frame, then a data check. */
  dataChanged(): void {
    this.dataDirty = true;
    this.request();
  }

  /** The pointer moved: a frame, then a fresh hover. */
  hoverChanged(): void {
    this.hoverDirty = true;
    this.request();
  }

  /** Draws now (not on the next frame). */
  draw(): void {
    const { state, renderer, hover, canvas } = this.parts;
    if (this.closed || state.width <= 1) return;
    const started = this.clock.now();
    renderer.draw(state.scene(this.client.prepared()));
    keepNewest(this.frameTimes, this.clock.now() - started);
    const drawn = renderer.stats.events;
    if (drawn !== this.lastDrawnEvents) {
      canvas.setAttribute("data-drawn-events", String(drawn));
      this.lastDrawnEvents = drawn;
    }
    // What is under a still pointer changes when the view moves under it.
    if (this.hoverDirty || (state.pointer.inside && hover.shown)) {
      this.hoverDirty = false;
      const now = state.hover(this.client.prepared(), this.client.dragging());
      hover.setCursor(now.cursor);
      if (now.hit) hover.show(now.hit, now.left, now.top);
      else hover.hide();
    }
    if (this.dataDirty) {
      this.dataDirty = false;
      this.client.checkData();
    }
    this.client.drawn();
  }

  close(): void {
    this.closed = true;
    if (this.handle) this.clock.cancel(this.handle);
  }

  private onFrame(now: number): void {
    this.handle = 0;
    if (this.closed) return;
    const animating = this.animate(now);
    this.draw();
    if (animating) this.request();
  }

  /** Applies held keys for the time since the last frame; whether to keep animating. */
  private animate(now: number): boolean {
    const { held, state } = this.parts;
    if (held.size === 0) {
      this.lastFrame = 0;
      return false;
    }
    const dt = this.lastFrame ? Math.min(MAX_STEP_S, (now - this.lastFrame) / 1000) : 1 / 60;
    if (this.lastFrame) keepNewest(this.frameIntervals, now - this.lastFrame);
    this.lastFrame = now;
    this.client.setView(moved(state.view, held.motion(now), dt, state.anchor(), state.span));
    return held.size > 0;
  }
}
