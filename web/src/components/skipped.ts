import { el } from "../dom";
import type { SkippedFile } from "../api";

/** How many skipped files the header's list names; the count says the rest. */
export const SHOWN_SKIPPED = 50;

/**
 * The header's "N files skipped" disclosure: each file of the logdir that discovery did not
 * take, with its reason; hidden when there is none.
 */
export function renderSkipped(box: HTMLDetailsElement, skipped: SkippedFile[]): void {
  box.hidden = skipped.length === 0;
  const items = skipped.slice(0, SHOWN_SKIPPED).map((file) => el("li", {}, [el("code", {}, file.path), `: ${file.why}`]));
  if (skipped.length > SHOWN_SKIPPED) items.push(el("li", {}, `… and ${skipped.length - SHOWN_SKIPPED} more (stepscope info lists them all)`));
  box.replaceChildren(el("summary", {}, `${skipped.length} ${skipped.length === 1 ? "file" : "files"} skipped`), el("ul", {}, items));
}
