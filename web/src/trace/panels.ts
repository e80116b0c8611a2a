/**
 * The trace viewer's DOM: the toolbar (tools, reset, timing readout, search with "Only
 * matches", status, export link), the canvas with its tooltip and the keys "?" (in the
 * corner above the track names, where it takes no room from the toolbar), and the details
 * pane (filled by details.ts, closed while it has nothing to show: details_pane.ts), plus the
 * small writers that keep them showing the state. Ids and data attributes are what the
 * browser tests read.
 *
 * The toolbar comes after the timeline in the DOM and is drawn above it (CSS `order`): the
 * canvas has the focus when the page opens, so the first Tab goes to the toolbar's first
 * control, not past the timeline to the splitter below it.
 */

import { el } from "../dom";
import { groupThousands } from "../format";
import type { Match } from "./api";
import type { TraceAnswer } from "./decode";
import type { EventHit, RunHit } from "./model";
import { GUTTER_WIDTH } from "./render";
import { formatDuration, type TimeRange } from "./timeline";
import type { Tool } from "./view_state";

/** The "?" button's width and height (details_pane.css). */
const KEYS_BUTTON_PX = 20;

/** What the toolbar's controls ask for. */
export interface ToolbarActions {
  tool(tool: Tool): void;
  reset(): void;
  find(before: boolean): void;
  /** Esc in the search box: back to the timeline. */
  leaveSearch(): void;
  searchEdited(): void;
  filterToggled(): void;
  /** The export link is about to be followed: its address should be the view's. */
  exporting(): void;
  /** The "?" button: show the keys in the details pane, or close it. */
  keys(): void;
  /** The details pane's close button. */
  closeDetails(): void;
  /** The "Critical path" toggle was pressed. */
  criticalPath(): void;
}

export interface Panels {
  root: HTMLElement;
  canvas: HTMLCanvasElement;
  wrap: HTMLElement;
  tooltip: HTMLElement;
  details: HTMLElement;
  /** The "?" in the timeline's corner: `aria-expanded` while the pane shows the keys. */
  keysButton: HTMLButtonElement;
  /** The bar between the timeline and the details pane that resizes them (splitter.ts). */
  splitter: HTMLElement;
  status: HTMLElement;
  searchInput: HTMLInputElement;
  searchStatus: HTMLElement;
  measureOut: HTMLElement;
  filterBox: HTMLInputElement;
  exportLink: HTMLAnchorElement;
  exportPerfettoLink: HTMLAnchorElement;
  toolButtons: Record<Tool, HTMLButtonElement>;
  /** The critical path overlay's toggle (`aria-pressed`). */
  pathButton: HTMLButtonElement;
}

/**
 * `idPrefix` goes before every id, so two viewers in one page (the paired trace view:
 * "base-", "new-") have ids of their own; the single viewer's are unprefixed.
 */
export function buildPanels(eventCount: number, actions: ToolbarActions, idPrefix = ""): Panels {
  const id = (name: string): string => `${idPrefix}${name}`;
  const canvas = el("canvas", { id: id("trace-canvas"), class: "tv-canvas", tabindex: 0, "aria-label": "Trace timeline", "data-drawn-events": 0 });
  const tooltip = el("div", { id: id("tv-tooltip"), class: "tv-tooltip", hidden: true });
  const keysButton = el("button", { type: "button", id: id("tv-keys"), class: "tv-keys", title: "Keys and mouse", "aria-label": "Keys and mouse", "aria-expanded": "false", "aria-controls": id("tv-details"), onclick: () => actions.keys() }, "?");
  keysButton.style.left = `${GUTTER_WIDTH - KEYS_BUTTON_PX - 6}px`;
  // Before the canvas: the canvas, focused when the page opens, Tabs on to the toolbar.
  const wrap = el("div", { class: "tv-canvas-wrap" }, [keysButton, canvas, tooltip]);
  const closeButton = el("button", { type: "button", id: id("tv-details-close"), class: "tv-details-close", title: "Close the details (Esc)", "aria-label": "Close the details", onclick: () => actions.closeDetails() }, "×");
  const details = el("section", { id: id("tv-details"), class: "tv-details", "aria-label": "Details", "data-kind": "empty" }, [closeButton, el("div", { class: "tv-details-body" })]);
  const splitter = el("div", {
    id: id("tv-splitter"),
    class: "tv-splitter",
    role: "separator",
    tabindex: 0,
    "aria-orientation": "horizontal",
    "aria-controls": id("tv-details"),
    "aria-label": "Resize the details pane",
    title: "Drag (or focus and press ↑ / ↓) to resize the details pane",
  });
  const status = el("span", { id: id("tv-status"), class: "tv-status", "aria-live": "polite" });
  const searchInput = el("input", { id: id("tv-search"), type: "search", placeholder: "Find events by name", "aria-label": "Find events by name", autocomplete: "off" });
  const searchStatus = el("span", { id: id("tv-search-status"), class: "tv-search-status", "aria-live": "polite" });
  // Always in the toolbar, its width fixed, shown or not: a measurement appearing moves nothing.
  const measureOut = el("span", { id: id("tv-measure"), class: "tv-measure", "data-empty": true });
  const filterBox = el("input", { type: "checkbox", id: id("tv-filter") });
  const exportLink = el("a", { id: id("tv-export"), class: "button-link", download: "", title: "Download the visible range as Chrome trace JSON (opens in Perfetto)" }, "Export this range");
  const exportPerfettoLink = el(
    "a",
    { id: id("tv-export-pftrace"), class: "button-link", download: "", title: "Download the visible range as a Perfetto trace (.pftrace: smaller, opens in Perfetto as it is)" },
    "as .pftrace",
  );
  const toolButtons: Record<Tool, HTMLButtonElement> = {
    select: el("button", { type: "button", id: id("tv-select"), "aria-pressed": "true", title: "Select (1): click an event, drag a range" }, "Select"),
    timing: el("button", { type: "button", id: id("tv-timing"), "aria-pressed": "false", title: "Timing (2): drag to measure" }, "Timing"),
  };
  const pathButton = el(
    "button",
    { type: "button", id: id("tv-critical-path"), "aria-pressed": "false", title: "Draw the critical path of the step in view (the critical_path tool)", onclick: () => actions.criticalPath() },
    "Critical path",
  );
  const toolbar = el("div", { class: "tv-toolbar", role: "toolbar", "aria-label": "Trace viewer tools" }, [
    el("div", { class: "tv-group", role: "group", "aria-label": "Tool" }, [toolButtons.select, toolButtons.timing]),
    el("button", { type: "button", id: id("tv-reset"), title: "Show the whole profile (0)", onclick: () => actions.reset() }, "Reset zoom"),
    pathButton,
    measureOut,
    el("div", { class: "tv-search" }, [
      searchInput,
      el("button", { type: "button", id: id("tv-prev"), title: "Previous match (Shift+Enter)", "aria-label": "Previous match", onclick: () => actions.find(true) }, "‹"),
      el("button", { type: "button", id: id("tv-next"), title: "Next match (Enter)", "aria-label": "Next match", onclick: () => actions.find(false) }, "›"),
      searchStatus,
      el("label", { class: "tv-filter", title: "Draw only the events whose name contains the search text" }, [filterBox, "Only matches"]),
    ]),
    status,
    el("div", { class: "tv-group", role: "group", "aria-label": "Export" }, [exportLink, exportPerfettoLink]),
  ]);
  const root = el("div", { class: "tv-root", "data-events": eventCount, "data-details": "closed" }, [wrap, toolbar, splitter, details]);

  toolButtons.select.addEventListener("click", () => actions.tool("select"));
  toolButtons.timing.addEventListener("click", () => actions.tool("timing"));
  searchInput.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      actions.find(event.shiftKey);
    } else if (event.key === "Escape") {
      actions.leaveSearch();
    }
  });
  searchInput.addEventListener("input", () => actions.searchEdited());
  filterBox.addEventListener("change", () => actions.filterToggled());
  for (const link of [exportLink, exportPerfettoLink]) {
    link.addEventListener("pointerdown", () => actions.exporting());
    link.addEventListener("focus", () => actions.exporting());
  }
  return { root, canvas, wrap, tooltip, details, keysButton, splitter, status, searchInput, searchStatus, measureOut, filterBox, exportLink, exportPerfettoLink, toolButtons, pathButton };
}

/** The page fills the window below the header; the canvas takes what the bars leave. */
export function fitHeight(root: HTMLElement): void {
  const top = root.getBoundingClientRect().top + window.scrollY;
  root.style.height = `${Math.max(360, window.innerHeight - top - 12)}px`;
}

/** Sizes the canvas's backing store for the device's pixels and its box in CSS pixels. */
export function sizeCanvas(canvas: HTMLCanvasElement, width: number, height: number, dpr: number): void {
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
}

export function showTool(panels: Pick<Panels, "canvas" | "toolButtons">, tool: Tool): void {
  for (const [name, button] of Object.entries(panels.toolButtons)) button.setAttribute("aria-pressed", String(name === tool));
  panels.canvas.setAttribute("data-tool", tool);
}

/** The timing readout: the measured length; without a measurement the readout keeps its
 * room in the toolbar, invisible (`data-empty`), so nothing beside it moves. */
export function showTiming(out: HTMLElement, timing: TimeRange | null): void {
  out.toggleAttribute("data-empty", !timing);
  if (timing) {
    const text = `Δ ${formatDuration(timing.end_ps - timing.start_ps)}`;
    out.textContent = text;
    out.title = text;
    out.setAttribute("data-value", String(Math.round(timing.end_ps - timing.start_ps)));
  } else {
    out.textContent = "";
    out.removeAttribute("title");
    out.removeAttribute("data-value");
  }
}

/** The search readout; `data-ordinal`/`data-total` say which match of how many. */
export function showSearchStatus(out: HTMLElement, text: string, match: Match | null, total?: number): void {
  out.textContent = text;
  if (match) {
    out.setAttribute("data-ordinal", String(match.ordinal + 1));
    out.setAttribute("data-total", String(match.total));
  } else {
    out.removeAttribute("data-ordinal");
    if (total === undefined) out.removeAttribute("data-total");
    else out.setAttribute("data-total", String(total));
  }
}

export function showStatus(out: HTMLElement, text: string, state: "ok" | "error"): void {
  out.textContent = text;
  out.setAttribute("data-state", state);
}

/** The status line for a query answer: what it holds and its size. */
export function answerText(answer: Pick<TraceAnswer, "header" | "bytes">): string {
  const { events, runs } = answer.header.counts;
  return `${groupThousands(String(events))} events, ${groupThousands(String(runs))} runs · ${(answer.bytes / 1024).toFixed(0)} KiB`;
}

/** The canvas cursor and the tooltip over it, touching the DOM only when they change. */
export class HoverView {
  private cursor = "";
  private key = "";
  private left = -1;
  private top = -1;

  constructor(
    private readonly canvas: HTMLElement,
    private readonly tooltip: HTMLElement,
  ) {}

  /** Whether a tooltip is shown. */
  get shown(): boolean {
    return this.key !== "";
  }

  setCursor(cursor: string): void {
    if (cursor === this.cursor) return;
    this.canvas.style.cursor = cursor;
    this.cursor = cursor;
  }

  show(hit: EventHit | RunHit, left: number, top: number): void {
    const key = hit.kind === "event" ? `e${hit.id}` : `r${hit.lane}:${hit.row}`;
    if (key !== this.key) {
      this.key = key;
      if (hit.kind === "event") {
        this.tooltip.replaceChildren(el("strong", {}, hit.name), el("span", {}, formatDuration(hit.duration_ps)));
      } else {
        this.tooltip.replaceChildren(
          el("strong", {}, `${groupThousands(String(hit.count))} merged event${hit.count === 1 ? "" : "s"}`),
          el("span", {}, `${formatDuration(hit.end_ps - hit.start_ps)} · busy ${(hit.busy * 100).toFixed(0)}%`),
        );
      }
      this.tooltip.setAttribute("data-kind", hit.kind);
      this.tooltip.hidden = false;
    }
    if (left !== this.left || top !== this.top) {
      this.left = left;
      this.top = top;
      this.tooltip.style.transform = `translate(${left}px, ${top}px)`;
    }
  }

  hide(): void {
    if (this.key) {
      this.key = "";
      this.tooltip.hidden = true;
    }
  }
}
