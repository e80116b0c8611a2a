/**
 * Any tool this page does not know yet (a server newer than the page, a future
 * trace_viewer): its top-level scalar fields as metrics and every table it has, so a new
 * tool is usable before it gets a page of its own. A table with no rows (hlo_stats on a
 * profile without XLA ops) is one line saying so, not an empty table.
 */

import { at, card, metric, metrics, note } from "../components/metric";
import { renderTable } from "../components/table";
import { add, grid } from "./common";
import type { PageContext, ToolPage } from "./types";

function render(root: HTMLElement, context: PageContext): void {
  const layout = grid(root);
  const data = context.data;
  if (data && typeof data === "object" && !Array.isArray(data)) {
    const scalars = Object.entries(data as Record<string, unknown>).filter(
      ([, value]) => value === null || ["number", "string", "boolean"].includes(typeof value),
    );
    if (scalars.length > 0) {
      add(
        layout,
        card(
          "Summary",
          metrics(scalars.map(([key]) => metric(key, at(data as Record<string, unknown>, key), key))),
          { id: "generic-summary" },
          true,
        ),
      );
    }
  }
  for (const table of context.tables) {
    const body =
      table.rows.length === 0
        ? note(`No ${table.name.replaceAll("_", " ")} in this profile.`, "note", { "data-empty-table": table.name })
        : renderTable(table, { selection: context.selection });
    add(layout, card(table.name, body, { "data-card": table.name }, true));
  }
}

export const genericPage: ToolPage = { tables: true, render };
