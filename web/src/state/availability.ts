/**
 * Only the tools that apply: which tools of the menu have nothing to show for the selected
 * profile, and why, from `/api/tools` (the registry's rules, decided by the server from
 * the profile's planes, lines and event types once it is analysed) and the page's own
 * rule for the compare view (it needs two profiles in the log directory). A tool with a
 * reason is greyed out in the menu, the reason on hover; opened anyway (by its address),
 * its page is the reason in one line instead of empty charts.
 */

import type { ToolInfo, ToolsResponse } from "../api";
import { COMPARE_TOOL } from "./compare";

export const NO_BASE = "one profile in this log directory: nothing to compare it with";

/** The menu of one run/host: its tools, the reasons of those with nothing to show, and whether the server knew them yet. */
export interface ToolMenu {
  tools: ToolInfo[];
  unavailable: Record<string, string>;
  checked: boolean;
}

/** The menu from the server's answer, its entries (`tools`: the answer's tools, then its analyses over several profiles) and the number of profiles in the log directory. */
export function toolMenu(answer: Omit<ToolsResponse, "analyses">, tools: ToolInfo[], profiles: number): ToolMenu {
  const unavailable = { ...answer.unavailable };
  if (profiles < 2) unavailable[COMPARE_TOOL] = NO_BASE;
  return { tools, unavailable, checked: answer.checked };
}

/** Why `tool` has nothing to show here, or "" (it has, or the server does not know yet). */
export function whyNot(menu: ToolMenu | undefined, tool: string): string {
  return menu?.unavailable[tool] ?? "";
}
