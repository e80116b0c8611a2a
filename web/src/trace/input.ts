/**
 * The trace viewer's input controller: pointer, wheel and keyboard events on the canvas and
 * the window turned (through gestures.ts) into intents for the viewer. It owns the drag in
 * progress and the held W/A/S/D keys; every listener goes with close().
 *
 * Keys are heard on the window (the timeline need not have focus). With a `keyScope` (two
 * viewers in one page), only keys typed while the focus is inside it count, so W zooms the
 * viewer last clicked, not both.
 */

import { commandFor, endDrag, grabsTimeline, HeldKeys, keyName, MOTION_KEYS, moveDrag, startDrag, wheelAction, type Command, type Drag, type DragStep } from "./gestures";
import type { AreaMark } from "./render";
import { panBy, zoomAt, type TimeRange } from "./timeline";
import type { Tool, ViewState } from "./view_state";

/** What the input asks the viewer to do. */
export interface Intents {
  /** The pointer moved with no drag: the hover may change. */
  pointerMoved(): void;
  hideTooltip(): void;
  /** A drag step: move the view, scroll, mark a range or a timing. */
  drag(step: DragStep): void;
  /** Moves the view (clamped to the profile). */
  setView(view: TimeRange): void;
  /** Scrolls the tracks by CSS pixels. */
  scroll(px: number): void;
  toggleSection(name: string): void;
  summarize(area: AreaMark): void;
  click(x: number, y: number): void;
  resetZoom(): void;
  setTool(tool: Tool): void;
  /** Frames the selected event ("F"). */
  frameSelection(): void;
  focusSearch(): void;
  /** Esc: the timing measurement, then the dragged range, then the selected event. */
  clearMarks(): void;
  /** A motion key went down: frames until the held keys let go. */
  motion(): void;
  /** The window resized. */
  windowResized(): void;
}

function isTyping(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  const tag = target.tagName;
  return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable;
}

export class InputController {
  readonly held = new HeldKeys();
  private drag: Drag | null = null;
  private readonly cleanups: (() => void)[] = [];
  private closed = false;

  constructor(
    private readonly canvas: HTMLCanvasElement,
    private readonly state: ViewState,
    private readonly intents: Intents,
    private readonly keyScope: HTMLElement | null = null,
  ) {
    this.listen(canvas, "pointerdown", (event) => this.onPointerDown(event as PointerEvent));
    this.listen(canvas, "pointermove", (event) => this.onPointerMove(event as PointerEvent));
    this.listen(canvas, "pointerup", (event) => this.onPointerUp(event as PointerEvent));
    this.listen(canvas, "pointercancel", () => {
      this.drag = null;
    });
    this.listen(canvas, "pointerleave", () => {
      this.state.pointer.inside = false;
      this.intents.hideTooltip();
    });
    this.listen(canvas, "wheel", (event) => this.onWheel(event as WheelEvent), { passive: false });
    this.listen(canvas, "contextmenu", (event) => {
      if (this.drag) event.preventDefault();
    });
    this.listen(window, "keydown", (event) => this.onKeyDown(event as KeyboardEvent));
    this.listen(window, "keyup", (event) => this.onKeyUp(event as KeyboardEvent));
    this.listen(window, "blur", () => this.held.clear());
    this.listen(window, "resize", () => this.intents.windowResized());
  }

  /** Whether a drag is in progress (no hover meanwhile). */
  get dragging(): boolean {
    return this.drag !== null;
  }

  close(): void {
    this.closed = true;
    for (const cleanup of this.cleanups) cleanup();
  }

  private listen(target: EventTarget, type: string, handler: (event: Event) => void, options?: AddEventListenerOptions): void {
    target.addEventListener(type, handler, options);
    this.cleanups.push(() => target.removeEventListener(type, handler, options));
  }

  private local(event: MouseEvent): { x: number; y: number } {
    const box = this.canvas.getBoundingClientRect();
    return { x: event.clientX - box.left, y: event.clientY - box.top };
  }

  private onWheel(event: WheelEvent): void {
    event.preventDefault();
    const action = wheelAction(event, this.state.plotHeight());
    const { x } = this.local(event);
    this.state.pointer.x = x;
    this.state.pointer.inside = true;
    const { view, span } = this.state;
    if (action.kind === "zoom") {
      this.intents.setView(zoomAt(view, action.factor, this.state.anchor(), span));
      return;
    }
    if (action.panPx) this.intents.setView(panBy(view, action.panPx * this.state.psPerPx(), span));
    if (action.scrollPx) this.intents.scroll(action.scrollPx);
  }

  private onPointerDown(event: PointerEvent): void {
    const { x, y } = this.local(event);
    this.state.pointer = { x, y, inside: true };
    this.canvas.focus({ preventScroll: true });
    if (event.button !== 0 && event.button !== 1) return;
    this.canvas.setPointerCapture(event.pointerId);
    this.intents.hideTooltip();
    if (grabsTimeline(x, y, event.button)) event.preventDefault();
    const drag = startDrag(this.state, x, y, event.button);
    if (drag) this.drag = drag;
  }

  private onPointerMove(event: PointerEvent): void {
    const { x, y } = this.local(event);
    this.state.pointer = { x, y, inside: true };
    if (!this.drag) {
      this.intents.pointerMoved();
      return;
    }
    this.intents.drag(moveDrag(this.drag, x, y, this.state));
  }

  private onPointerUp(event: PointerEvent): void {
    const drag = this.drag;
    this.drag = null;
    if (this.canvas.hasPointerCapture(event.pointerId)) this.canvas.releasePointerCapture(event.pointerId);
    if (!drag) return;
    const { x, y } = this.local(event);
    const end = endDrag(drag, this.state.area);
    if (end?.kind === "toggle") this.intents.toggleSection(end.name);
    else if (end?.kind === "summarize") this.intents.summarize(end.area);
    else if (end?.kind === "click") this.intents.click(x, y);
  }

  private onKeyDown(event: KeyboardEvent): void {
    if (this.closed || event.ctrlKey || event.metaKey || event.altKey) return;
    if (isTyping(event.target) || document.querySelector("dialog[open]")) return;
    if (this.keyScope && !this.keyScope.contains(document.activeElement)) return;
    const key = keyName(event.key);
    if (MOTION_KEYS.has(key)) {
      event.preventDefault();
      if (this.held.press(key, performance.now())) this.intents.motion();
      return;
    }
    if (event.repeat) return;
    const command = commandFor(key);
    if (!command) return;
    this.run(command);
    event.preventDefault();
  }

  private run(command: Command): void {
    const intents = this.intents;
    if (command === "reset") intents.resetZoom();
    else if (command === "select-tool") intents.setTool("select");
    else if (command === "timing-tool") intents.setTool("timing");
    else if (command === "frame") intents.frameSelection();
    else if (command === "search") intents.focusSearch();
    else intents.clearMarks();
  }

  private onKeyUp(event: KeyboardEvent): void {
    this.held.release(keyName(event.key), performance.now());
  }
}
