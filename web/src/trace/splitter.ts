/**
 * The splitter between the timeline and the details pane: drag it (pointer events, captured
 * so the drag follows the pointer off the bar) or focus it and use the arrow keys to give
 * the pane more or less of the page. It is a focusable `role="separator"` whose
 * `aria-valuenow` is the pane's height in px. The height is kept in localStorage when a drag
 * ends or a key moves it; the timeline canvas follows through the viewer's ResizeObserver
 * on its wrap, which the pane's growing or shrinking resizes.
 */

import { clampHeight, detailsBounds, keyHeight, loadDetailsHeight, saveDetailsHeight, type Bounds } from "./details_size";

export class DetailsSplitter {
  /** The height the person chose; what is shown is this clamped to the room there is. */
  private wanted: number;
  private shown = 0;
  private drag: { pointerId: number; startY: number; startHeight: number } | null = null;
  private readonly cleanups: (() => void)[] = [];

  constructor(
    private readonly root: HTMLElement,
    private readonly wrap: HTMLElement,
    readonly element: HTMLElement,
    private readonly details: HTMLElement,
  ) {
    this.wanted = loadDetailsHeight();
    this.listen("pointerdown", (event) => this.onPointerDown(event as PointerEvent));
    this.listen("pointermove", (event) => this.onPointerMove(event as PointerEvent));
    this.listen("pointerup", (event) => this.onPointerUp(event as PointerEvent));
    this.listen("pointercancel", (event) => this.onPointerUp(event as PointerEvent));
    this.listen("lostpointercapture", () => this.endDrag());
    this.listen("keydown", (event) => this.onKeyDown(event as KeyboardEvent));
  }

  close(): void {
    for (const cleanup of this.cleanups) cleanup();
  }

  /** Shows the chosen height within the room the page has now (after a resize of the page). */
  fit(): void {
    this.apply(this.wanted);
  }

  /**
   * The px the timeline's wrap and the pane share: from the wrap's top to the page's
   * bottom, less what lies between them (the splitter and the gaps around it), which
   * does not change as they trade height.
   */
  private bounds(): Bounds {
    const wrap = this.wrap.getBoundingClientRect();
    const details = this.details.getBoundingClientRect();
    const between = details.top - wrap.bottom;
    return detailsBounds(this.root.getBoundingClientRect().bottom - wrap.top - between);
  }

  private apply(height: number): void {
    const bounds = this.bounds();
    const shown = clampHeight(height, bounds);
    const element = this.element;
    element.setAttribute("aria-valuemin", String(bounds.min));
    element.setAttribute("aria-valuemax", String(bounds.max));
    element.setAttribute("aria-valuenow", String(shown));
    element.setAttribute("aria-valuetext", `details pane ${shown} px`);
    if (shown === this.shown) return;
    this.shown = shown;
    this.details.style.flexBasis = `${shown}px`;
  }

  /** Sets, shows and remembers a height the person asked for. */
  private choose(height: number): void {
    this.apply(height);
    this.wanted = this.shown;
  }

  private onPointerDown(event: PointerEvent): void {
    if (event.button !== 0) return;
    event.preventDefault(); // no text selection while dragging
    this.element.setPointerCapture(event.pointerId);
    this.element.focus({ preventScroll: true });
    this.drag = { pointerId: event.pointerId, startY: event.clientY, startHeight: this.shown };
    this.element.setAttribute("data-dragging", "true");
  }

  private onPointerMove(event: PointerEvent): void {
    const drag = this.drag;
    if (!drag || event.pointerId !== drag.pointerId) return;
    // Up grows the pane: it lies below the splitter.
    this.choose(drag.startHeight + drag.startY - event.clientY);
  }

  private onPointerUp(event: PointerEvent): void {
    if (!this.drag || event.pointerId !== this.drag.pointerId) return;
    if (this.element.hasPointerCapture(event.pointerId)) this.element.releasePointerCapture(event.pointerId);
    this.endDrag();
  }

  private endDrag(): void {
    if (!this.drag) return;
    this.drag = null;
    this.element.removeAttribute("data-dragging");
    saveDetailsHeight(this.wanted);
  }

  private onKeyDown(event: KeyboardEvent): void {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const height = keyHeight(event.key, this.shown, this.bounds());
    if (height === null) return;
    // Handled here: the timeline's own keys (on the window) do not see it.
    event.preventDefault();
    event.stopPropagation();
    this.choose(height);
    saveDetailsHeight(this.wanted);
  }

  private listen(type: string, handler: (event: Event) => void): void {
    this.element.addEventListener(type, handler);
    this.cleanups.push(() => this.element.removeEventListener(type, handler));
  }
}
