/**
 * Progress shown while the server analyses a profile (its 202 answers) and while a capture
 * runs. A native <progress> is accessible and needs no styling library.
 */

import type { Pending } from "../api";
import { el } from "../dom";

/** 0..1 (clamped) as a whole percentage. */
export function percentOf(fraction: number): number {
  if (!Number.isFinite(fraction)) return 0;
  return Math.round(Math.min(1, Math.max(0, fraction)) * 100);
}

/** "analysing… 40%": the server's message, or its state when it sent none. */
export function pendingText(pending: Pending): string {
  const message = (pending.message || `${pending.state}…`).trim();
  return `${message} ${percentOf(pending.progress)}%`;
}

/** The #progress block of the tool area. */
export function renderProgress(pending: Pending): HTMLElement {
  const percent = percentOf(pending.progress);
  return el("div", { id: "progress", role: "status", "data-progress": percent, "data-state": pending.state }, [
    el("progress", { max: 100, value: percent, "aria-label": "analysis progress" }),
    el("span", { class: "progress-text" }, pendingText(pending)),
  ]);
}

/** A bar for elapsed / total (the capture dialog). */
export function progressBar(done: number, total: number, label: string): HTMLElement {
  const fraction = total > 0 ? done / total : 0;
  return el("div", { class: "progress-line" }, [
    el("progress", { max: 100, value: percentOf(fraction), "aria-label": label }),
    el("span", { class: "progress-text" }, `${label} ${percentOf(fraction)}%`),
  ]);
}
