/**
 * What a tool page gets and how the registry describes it. A page renders into `root`
 * (already in the document, so charts can size themselves) from the tool's JSON and, where
 * it shows tables, the tables API's answer.
 */

import type { ApiTable, Pending, Selection } from "../api";

export interface PageContext {
  data: unknown;
  tables: ApiTable[];
  selection: Selection;
  /**
   * Loads the tool again with these option values (those that differ from the defaults,
   * as `selection.options`), as the options bar does: a new history entry.
   */
  setOptions?: (options: Record<string, string>) => void;
}

/**
 * What a page that loads its own data (`mount`) gets from the shell. The members here and in
 * ToolPage are plain functions (none uses `this`), so they may be passed on detached.
 */
export interface MountContext {
  selection: Selection;
  /** Aborted when the page is left: the page stops its requests and removes its listeners. */
  signal: AbortSignal;
  /** Shows the server's progress (202 answers) in the tool area. */
  onPending: (pending: Pending) => void;
  /** The page is drawn: `#tool[data-state]` becomes "ready". */
  ready: () => void;
  /** The page cannot be shown: the tool area shows the error. */
  fail: (message: string) => void;
  /** Loads the tool again with these options (a new history entry), as PageContext's does. */
  setOptions?: (options: Record<string, string>) => void;
}

export interface ToolPage {
  /** Whether the page shows tables from /api/tables (fetched after /api/data). */
  tables: boolean;
  render: (root: HTMLElement, context: PageContext) => void;
  /**
   * A page with its own endpoints (the trace viewer): the shell skips /api/data, calls this
   * with the (empty) content area, and waits for `ready` or `fail`.
   */
  mount?: (root: HTMLElement, context: MountContext) => void;
  /**
   * Another page for some option values of the same tool (the compare view's `pair`
   * opens the paired trace view); undefined keeps this one.
   */
  modeFor?: (options: Record<string, string> | undefined) => ToolPage | undefined;
}
