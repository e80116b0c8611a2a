/**
 * The trace viewer's details pane (`#tv-details`): one selected event (name, start, duration,
 * args and flows), a merged run, the aggregates of a drag-selected range, or the keys.
 * `data-kind` says which ("empty": nothing, and the pane is closed, see details_pane.ts);
 * fields carry `data-field`, table cells `data-key` and `data-value`. What is shown goes
 * into the pane's `.tv-details-body`, beside its close button.
 */

import { el, replaceChildren, type Child } from "../dom";
import { groupThousands } from "../format";
import { exactText } from "../rawjson";
import type { EventAnswer, FlowEnd, Stat, SummaryAnswer } from "./api";
import type { RunHit } from "./model";
import { formatDuration, formatStartMs } from "./timeline";

/** What is known of an event before its details arrive (from the answer or a search match). */
export interface EventBasics {
  id: number;
  name: string;
  start_ps: number;
  duration_ps: number;
  track: number;
  depth: number;
}

export type Kind = "empty" | "keys" | "event" | "run" | "summary";

function field(name: string, label: string, value: Child, raw?: string | number): HTMLElement {
  return el("div", { class: "tv-field", "data-field": name, "data-value": raw === undefined ? null : String(raw) }, [
    el("span", { class: "tv-label" }, label),
    el("span", { class: "tv-value" }, value),
  ]);
}

function setKind(pane: HTMLElement, kind: Kind): void {
  pane.setAttribute("data-kind", kind);
}

/** Where the pane's content goes (the pane itself where it has no body, as in unit tests). */
function body(pane: HTMLElement): HTMLElement {
  return pane.querySelector<HTMLElement>(":scope > .tv-details-body") ?? pane;
}

/** A stat's value as the JSON wrote it: a uint64 id past 2^53 keeps all its digits. */
function statValue(stat: Stat): string {
  const value = stat.value;
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  return exactText(stat, "value");
}

/** Nothing to show: the pane closes. */
export function showEmpty(pane: HTMLElement): void {
  setKind(pane, "empty");
  pane.removeAttribute("data-id");
  replaceChildren(body(pane), []);
}

/** The keys and mouse gestures (the "?" in the timeline's corner). */
export function showKeys(pane: HTMLElement): void {
  setKind(pane, "keys");
  pane.removeAttribute("data-id");
  replaceChildren(
    body(pane),
    el("p", { class: "tv-hint" }, [
      "Click an event for its details, drag to select a range. ",
      el("kbd", {}, "W"),
      "/",
      el("kbd", {}, "S"),
      " zoom, ",
      el("kbd", {}, "A"),
      "/",
      el("kbd", {}, "D"),
      " pan, ctrl+wheel zooms, shift+wheel pans, ",
      el("kbd", {}, "0"),
      " shows everything, ",
      el("kbd", {}, "1"),
      " select, ",
      el("kbd", {}, "2"),
      " timing, ",
      el("kbd", {}, "F"),
      " frames the selection, ",
      el("kbd", {}, "Esc"),
      " clears.",
    ]),
  );
}

function trackText(trackNames: (track: number) => string, track: number): string {
  return trackNames(track);
}

/**
 * An event: the basics at once; `answer` (from /api/trace/event) adds category, args, ids
 * and flows when it arrives. `onJump` selects the other end of a flow.
 */
export function showEvent(
  pane: HTMLElement,
  basics: EventBasics,
  trackNames: (track: number) => string,
  answer: EventAnswer | null,
  onJump: (end: FlowEnd) => void,
  loadingError?: string,
): void {
  setKind(pane, "event");
  pane.setAttribute("data-id", String(basics.id));
  const details = answer?.details;
  const fields: HTMLElement[] = [
    field("name", "Name", el("strong", { class: "tv-name" }, basics.name), basics.name),
    field("start", "Start", formatStartMs(basics.start_ps), basics.start_ps),
    field("duration", "Duration", formatDuration(basics.duration_ps), basics.duration_ps),
    field("end", "End", formatStartMs(basics.start_ps + basics.duration_ps), basics.start_ps + basics.duration_ps),
    field("track", "Track", details ? `${details.plane} › ${details.line}` : trackText(trackNames, basics.track), basics.track),
  ];
  if (details?.category) fields.push(field("category", "Category", details.category, details.category));
  if (details?.display_name && details.display_name !== basics.name) fields.push(field("display_name", "Display name", details.display_name));
  // XLA's HLO text, where the timeline names the op by its instruction (`copy-done.2`).
  if (details?.full_name && details.full_name !== basics.name) fields.push(field("full_name", "Full name", el("code", { class: "tv-full-name" }, details.full_name), details.full_name));
  const stats = details?.stats ?? [];
  const ids = details?.ids ?? {};
  const sections: Child[] = [el("div", { class: "tv-fields" }, fields)];
  if (answer) {
    const rows = stats.map((stat) =>
      el("tr", {}, [el("td", { "data-key": "name" }, stat.name), el("td", { "data-key": "value", "data-value": statValue(stat) }, statValue(stat))]),
    );
    for (const name of Object.keys(ids)) {
      if (!stats.some((stat) => stat.name === name)) {
        const text = exactText(ids, name);
        rows.push(el("tr", {}, [el("td", { "data-key": "name" }, name), el("td", { "data-key": "value", "data-value": text }, text)]));
      }
    }
    sections.push(
      el("div", { class: "tv-args" }, [
        el("h3", {}, "Args"),
        rows.length > 0 ? el("table", { class: "tv-table", "data-table": "tv-args" }, el("tbody", {}, rows)) : el("p", { class: "tv-hint" }, "No args."),
      ]),
    );
    if (answer.flows.length > 0) {
      sections.push(
        el("div", { class: "tv-flows" }, [
          el("h3", {}, `Flows (${answer.flows.length})`),
          el(
            "ul",
            { class: "tv-flow-list" },
            answer.flows.slice(0, 50).map((flow) => {
              const outgoing = flow.from.id === basics.id;
              const other = outgoing ? flow.to : flow.from;
              return el("li", { "data-flow": flow.id }, [
                el("span", { class: "tv-flow-dir" }, outgoing ? "→ " : "← "),
                el(
                  "button",
                  { type: "button", class: "link-button", "data-event": other.id ?? "", onclick: () => onJump(other), title: `${other.plane} › ${other.line}` },
                  other.name,
                ),
                el("span", { class: "tv-hint" }, ` ${flow.category} · ${formatDuration(other.duration_ps)}`),
              ]);
            }),
          ),
        ]),
      );
    }
  } else if (loadingError) {
    sections.push(el("p", { class: "tv-error" }, loadingError));
  } else {
    sections.push(el("p", { class: "tv-hint" }, "Loading args…"));
  }
  replaceChildren(body(pane), sections);
}

/** A run of merged sub-pixel events. */
export function showRun(pane: HTMLElement, run: RunHit, trackNames: (track: number) => string, onZoom: () => void): void {
  setKind(pane, "run");
  pane.removeAttribute("data-id");
  replaceChildren(body(pane), [
    el("div", { class: "tv-fields" }, [
      field("count", "Merged events", groupThousands(String(run.count)), run.count),
      field("start", "Start", formatStartMs(run.start_ps), run.start_ps),
      field("duration", "Span", formatDuration(run.end_ps - run.start_ps), run.end_ps - run.start_ps),
      field("busy", "Busy", `${(run.busy * 100).toFixed(1)}%`, run.busy),
      field("track", "Track", trackNames(run.track), run.track),
    ]),
    el("p", {}, [el("button", { type: "button", "data-action": "zoom", onclick: onZoom }, "Zoom in to see them")]),
  ]);
}

/** Aggregates of a selected range (/api/trace/summary), or "loading" while it comes. */
export function showSummary(pane: HTMLElement, range: { start_ps: number; end_ps: number }, summary: SummaryAnswer | null, error?: string): void {
  setKind(pane, "summary");
  pane.removeAttribute("data-id");
  const head = el("div", { class: "tv-fields" }, [
    field("start", "From", formatStartMs(range.start_ps), range.start_ps),
    field("duration", "Length", formatDuration(range.end_ps - range.start_ps), range.end_ps - range.start_ps),
    summary ? field("events", "Events", groupThousands(String(summary.events)), summary.events) : null,
  ].filter((node): node is HTMLElement => node !== null));
  if (!summary) {
    replaceChildren(body(pane), [head, el("p", { class: error ? "tv-error" : "tv-hint" }, error ?? "Summing the selection…")]);
    return;
  }
  const columns: [string, string][] = [
    ["name", "Name"],
    ["count", "Count"],
    ["total_ps", "Total"],
    ["selected_ps", "Inside selection"],
    ["max_ps", "Longest"],
  ];
  const table = el("table", { class: "tv-table", "data-table": "tv-summary" }, [
    el("thead", {}, el("tr", {}, columns.map(([key, label]) => el("th", { "data-key": key }, label)))),
    el(
      "tbody",
      {},
      summary.names.map((row) =>
        el("tr", {}, [
          el("td", { "data-key": "name", "data-value": row.name, title: row.full_name ?? row.name }, row.name),
          el("td", { "data-key": "count", "data-value": row.count, class: "num" }, groupThousands(String(row.count))),
          el("td", { "data-key": "total_ps", "data-value": row.total_ps, class: "num" }, formatDuration(row.total_ps)),
          el("td", { "data-key": "selected_ps", "data-value": row.selected_ps, class: "num" }, formatDuration(row.selected_ps)),
          el("td", { "data-key": "max_ps", "data-value": row.max_ps, class: "num" }, formatDuration(row.max_ps)),
        ]),
      ),
    ),
  ]);
  replaceChildren(body(pane), [head, summary.names.length > 0 ? table : el("p", { class: "tv-hint" }, "No events in the selection.")]);
}
