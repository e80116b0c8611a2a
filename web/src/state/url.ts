/**
 * The page's address is its state: `/?run=R&host=H&tool=T`, so a view can be shared by
 * copying the URL. These are the pure rules for reading it, writing it, and settling on a
 * concrete selection when a parameter is missing or names something that isn't there.
 */

import type { Evidence, RunInfo, Selection } from "../api";
import { sameOptions } from "./options";
import { withTableAddress } from "./table-url";

/** What the address asks for; any part may be missing. */
export interface Wanted {
  run?: string;
  host?: string;
  tool?: string;
}

export function parseQuery(search: string): Wanted {
  const params = new URLSearchParams(search);
  const wanted: Wanted = {};
  const run = params.get("run");
  const host = params.get("host");
  const tool = params.get("tool");
  if (run !== null) wanted.run = run;
  if (host !== null) wanted.host = host;
  if (tool !== null) wanted.tool = tool;
  return wanted;
}

const SELECTION_KEYS = ["run", "host", "tool"];

/**
 * "?run=..&host=..&tool=.." in that order (URLSearchParams escapes spaces and slashes),
 * then `extra` (a tool's own state, like the trace viewer's `start_ps`/`end_ps`).
 */
export function buildQuery(selection: Partial<Selection>, extra?: URLSearchParams): string {
  const params = new URLSearchParams();
  if (selection.run) params.set("run", selection.run);
  if (selection.host) params.set("host", selection.host);
  if (selection.tool) params.set("tool", selection.tool);
  if (extra) for (const [key, value] of extra) if (!SELECTION_KEYS.includes(key)) params.append(key, value);
  const query = params.toString();
  return query ? `?${query}` : "";
}

/**
 * The address's parameters beyond run/host/tool when they belong to `selection` (every
 * part the address names agrees with it), so settling on a selection keeps a deep link's
 * state; none when the address is about something else (they were that view's state).
 */
export function keptParams(search: string, selection: Selection): URLSearchParams | undefined {
  const here = parseQuery(search);
  if ((here.run !== undefined && here.run !== selection.run) || (here.host !== undefined && here.host !== selection.host) || (here.tool !== undefined && here.tool !== selection.tool)) {
    return undefined;
  }
  const extra = new URLSearchParams(search);
  for (const key of SELECTION_KEYS) extra.delete(key);
  return extra.toString() ? extra : undefined;
}

/** The run the address asks for if it exists, else the first one; null with no runs. */
export function pickRun(runs: RunInfo[], wanted?: string): RunInfo | null {
  return runs.find((run) => run.name === wanted) ?? runs[0] ?? null;
}

/** The wanted host if the run has it (so switching runs keeps the host), else its first. */
export function pickHost(run: RunInfo, wanted?: string): string {
  if (wanted !== undefined && run.hosts.includes(wanted)) return wanted;
  return run.hosts[0] ?? "";
}

/** The wanted tool if offered (so switching runs keeps the tool), else the first. */
export function pickTool(tools: string[], wanted?: string): string {
  if (wanted !== undefined && tools.includes(wanted)) return wanted;
  return tools[0] ?? "";
}

/** Run and host settled from what is wanted; the tool is settled once the tools are known. */
export function resolveRunHost(runs: RunInfo[], wanted: Wanted): { run: string; host: string } | null {
  const run = pickRun(runs, wanted.run);
  if (!run) return null;
  return { run: run.name, host: pickHost(run, wanted.host) };
}

export const TRACE_VIEWER = "trace_viewer";
/** The trace viewer's parameter that searches for a name when the page opens. */
export const FIND_PARAM = "find";
/** The trace viewer's parameter that opens it with the critical path overlay on ("1"). */
export const CRITICAL_PATH_PARAM = "critical_path";

/** The trace viewer's address on the selection's run and host, with its own parameters. */
export function traceViewerAddress(selection: Pick<Selection, "run" | "host">, params: Record<string, string>): string {
  return buildQuery({ run: selection.run, host: selection.host, tool: TRACE_VIEWER }, new URLSearchParams(params));
}

/**
 * Where a recommendation's evidence is shown: its tool on the selection's run and host,
 * with the evidence's table sorted by its key, biggest first (`&sort=<table>:<key>:desc`),
 * and searched for its rows (`&q=<table>:<text>`), so the link opens on the rows the
 * finding rests on; the tool alone where the evidence names no table.
 */
export function evidenceAddress(selection: Pick<Selection, "run" | "host">, evidence: Pick<Evidence, "tool" | "table" | "sort_key" | "query">): string {
  const rows =
    evidence.table === null
      ? new URLSearchParams()
      : withTableAddress(new URLSearchParams(), evidence.table, {
          sort: evidence.sort_key === null ? null : { key: evidence.sort_key, direction: "descending" },
          filter: evidence.query,
        });
  return buildQuery({ run: selection.run, host: selection.host, tool: evidence.tool }, rows);
}

export function sameSelection(a: Partial<Selection> | null, b: Partial<Selection> | null): boolean {
  return !!a && !!b && a.run === b.run && a.host === b.host && a.tool === b.tool && sameOptions(a.options, b.options);
}

/**
 * What a deep link asked for that is not there, in one line, or "" when all of it was
 * found: the page falls back (so the view is usable) but says so, instead of silently
 * showing another run under the address's name. `shown` is the selection it settled on
 * (by `resolveRunHost` and `pickTool`, which keep every wanted part that exists), so a
 * wanted part that differs from the shown one was not there.
 */
export function notFoundNotice(wanted: Wanted, shown: Selection): string {
  const parts: string[] = [];
  if (wanted.run !== undefined && wanted.run !== shown.run) {
    parts.push(`No run named '${wanted.run}' in this log directory; showing '${shown.run}'.`);
  }
  if (wanted.host !== undefined && wanted.host !== shown.host) {
    parts.push(`No host named '${wanted.host}' in run '${shown.run}'; showing '${shown.host}'.`);
  }
  if (wanted.tool !== undefined && wanted.tool !== shown.tool) {
    parts.push(`No tool named '${wanted.tool}' for this profile; showing '${shown.tool}'.`);
  }
  return parts.join(" ");
}
