/**
 * Which trace-viewer sections are collapsed, kept per run and host in localStorage, so a
 * reload (or coming back to the run) opens the timeline as the user left it. Not in the
 * address: it is how one person likes the screen laid out, not part of a shared view.
 */

import type { Selection } from "../api";

const PREFIX = "stepscope.trace.collapsed:";

export function storageKey(selection: Pick<Selection, "run" | "host">): string {
  return `${PREFIX}${selection.run}\u0000${selection.host}`;
}

/** The section names stored; [] for nothing stored or anything that is not a list of names. */
export function parseCollapsed(text: string | null): string[] {
  if (text === null) return [];
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value.filter((name): name is string => typeof name === "string") : [];
  } catch {
    return [];
  }
}

export function loadCollapsed(selection: Pick<Selection, "run" | "host">): string[] {
  try {
    return parseCollapsed(localStorage.getItem(storageKey(selection)));
  } catch {
    return []; // storage disabled (a private window's policy): nothing remembered
  }
}

export function saveCollapsed(selection: Pick<Selection, "run" | "host">, names: Iterable<string>): void {
  try {
    localStorage.setItem(storageKey(selection), JSON.stringify([...names]));
  } catch {
    // storage full or disabled: the layout is still right for this page
  }
}
