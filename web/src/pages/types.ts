/**
 * What a tool page gets and how the registry describes it. A page renders into `root`
 * (already in the document, so charts can size themselves) from the tool's JSON and, where
 * it shows tables, the tables API's answer.
 */

import type { ApiTable, Selection } from "../api";

export interface PageContext {
  data: unknown;
  tables: ApiTable[];
  selection: Selection;
}

export interface ToolPage {
  /** Whether the page shows tables from /api/tables (fetched after /api/data). */
  tables: boolean;
  render(root: HTMLElement, context: PageContext): void;
}
