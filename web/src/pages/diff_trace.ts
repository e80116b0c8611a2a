/**
 * The paired trace view (the compare view's `&pair=<i>`): both runs' trace viewers in one
 * page, stacked (timelines are wide; side by side each would get half the width, which is
 * the axis that matters), labelled base and new, each opened on its step of the aligned
 * pair `diff.steps[i]` with its time axis counted from that step's start and, by default,
 * one time scale for both (as long as the longer step: `pairWindows`), so the same offset
 * into both steps is at the same x under the same label; `&scale=step` lets each step fill
 * its viewer instead. A bar above moves both to another
 * steady pair (previous / next / a select): a new address and history entry, which the
 * shell loads as it loads any option change, so back and forward walk the pairs.
 *
 * The two viewers are ordinary TraceViewers made instance-safe by their options (see
 * trace/viewer.ts): ids prefixed "base-"/"new-", hooks at `window.__stepscope.traces.base`
 * and `.new`, keys for the one holding the focus, the address left to this page.
 */

import { getToolJson, type Selection } from "../api";
import { el } from "../dom";
import { formatTimeUs } from "../format";
import type { Diff, StepPair } from "../generated/diff";
import { baseOf, baseOptions, COMPARE_TOOL, isStepScale, neighbourPair, pairOptions, pairWindows, pickPair, stepPairLabel, steadyPairIndices, type Base } from "../state/compare";
import { hostLabel } from "../state/names";
import { buildQuery, TRACE_VIEWER } from "../state/url";
import { mountTraceViewer } from "../trace/viewer";
import type { MountContext, ToolPage } from "./types";

export const SIDES = ["base", "new"] as const;
type Side = (typeof SIDES)[number];

/** The room below the first viewer's top, shared by both: each gets half, at least MIN_PX. */
const MIN_PX = 340;

function pairText(pair: StepPair): string {
  return `step ${stepPairLabel(pair)} · ${formatTimeUs(pair.base_us)} → ${formatTimeUs(pair.new_us)}`;
}

function sideText(side: Side, where: Base, pair: StepPair): string {
  const step = side === "base" ? pair.base_step : pair.new_step;
  const time = side === "base" ? pair.base_us : pair.new_us;
  return `${side} · ${where.run} · ${hostLabel(where.host)} · step ${String(step)} (${formatTimeUs(time)})`;
}

interface PairControls {
  move(index: number): void;
  scale(stepScale: boolean): void;
}

function pairBar(data: Diff, index: number, current: Base, base: Base, stepScale: boolean, controls: PairControls): HTMLElement {
  const move = (to: number): void => {
    if (to !== index) controls.move(to);
  };
  const steady = steadyPairIndices(data);
  const previous = neighbourPair(steady, index, -1);
  const next = neighbourPair(steady, index, 1);
  const select = el(
    "select",
    { id: "pair-select", "aria-label": "Aligned pair of steps" },
    steady.map((at) => el("option", { value: String(at), ...(at === index ? { selected: true } : {}) }, pairText(data.steps[at] as StepPair))),
  );
  select.addEventListener("change", () => move(Number(select.value)));
  const scale = el("input", { type: "checkbox", id: "pair-scale", ...(stepScale ? {} : { checked: true }) });
  scale.addEventListener("change", () => controls.scale(!scale.checked));
  const compare = buildQuery({ run: current.run, host: current.host, tool: COMPARE_TOOL }, new URLSearchParams(baseOptions(base)));
  return el("div", { class: "tv-pair-bar", role: "toolbar", "aria-label": "Aligned steps" }, [
    el("a", { href: compare, id: "pair-back", class: "button-link" }, "← Compare"),
    el("button", { type: "button", id: "pair-prev", disabled: previous === index, title: "The previous aligned pair of steady steps", onclick: () => previous !== null && move(previous) }, "‹ Previous pair"),
    select,
    el("button", { type: "button", id: "pair-next", disabled: next === index, title: "The next aligned pair of steady steps", onclick: () => next !== null && move(next) }, "Next pair ›"),
    el("label", { class: "tv-filter", title: "Both viewers show the same length of time, so the same offset into both steps lines up; off: each step fills its viewer" }, [scale, "Same time scale"]),
    el("span", { class: "note" }, "Each time axis counts from its own step's start."),
  ]);
}

/** Both viewers' roots get half the height left below the first one's top. */
function sharedFit(slots: HTMLElement[]): (root: HTMLElement) => void {
  return (root) => {
    const [first, second] = slots.map((slot) => slot.getBoundingClientRect());
    if (!first || !second) return;
    const between = second.top - first.bottom; // the second's label and the gaps
    const room = window.innerHeight - (first.top + window.scrollY) - between - 12;
    root.style.height = `${Math.max(MIN_PX, Math.floor(room / 2))}px`;
  };
}

async function mountPair(root: HTMLElement, context: MountContext): Promise<void> {
  const current: Base = { run: context.selection.run, host: context.selection.host };
  const base = baseOf(context.selection.options);
  if (!base) {
    context.fail("the paired trace view needs a base run (base_run, base_host)");
    return;
  }
  let data: Diff;
  try {
    // The diff itself is the compare view's: its options are the base alone.
    data = await getToolJson<Diff>("data", { ...context.selection, options: baseOptions(base) }, context.onPending, context.signal);
  } catch (error) {
    if (!context.signal.aborted) context.fail(error instanceof Error ? error.message : String(error));
    return;
  }
  if (context.signal.aborted) return;
  const index = pickPair(data, context.selection.options);
  if (index === null) {
    context.fail("no aligned pair of steady steps: the runs share no step that both count");
    return;
  }
  const pair = data.steps[index] as StepPair;
  const stepScale = isStepScale(context.selection.options);
  const windows = pairWindows(pair, stepScale);
  if (!windows) return; // a steady pair has both steps (isSteadyPair)
  const controls: PairControls = {
    move: (to) => context.setOptions?.(pairOptions(base, to, stepScale)),
    scale: (step) => context.setOptions?.(pairOptions(base, index, step)),
  };
  const runs: Record<Side, Base> = { base, new: current };
  const slots = SIDES.map(() => el("div", { class: "tv-pair-slot" }));
  const sections = SIDES.map((side, at) =>
    el("section", { class: "tv-pair-run", "data-viewer": side, "aria-label": `${side} run` }, [
      el("h3", { class: "tv-pair-label", "data-side": side }, sideText(side, runs[side], pair)),
      slots[at] as HTMLElement,
    ]),
  );
  root.replaceChildren(el("div", { class: "tv-pair", id: "diff-trace", "data-pair": index }, [pairBar(data, index, current, base, stepScale, controls), ...sections]));
  const fit = sharedFit(slots);
  let waiting = SIDES.length;
  SIDES.forEach((side, at) => {
    const view = windows[side];
    const origin = (side === "base" ? pair.base_start_ps : pair.new_start_ps) ?? view.start_ps;
    const selection: Selection = { run: runs[side].run, host: runs[side].host, tool: TRACE_VIEWER };
    void mountTraceViewer(
      slots[at] as HTMLElement,
      {
        selection,
        signal: context.signal,
        onPending: context.onPending,
        fail: context.fail,
        // The page is ready when both have drawn their first frame with data.
        ready: () => {
          waiting -= 1;
          if (waiting === 0) context.ready();
        },
      },
      { view, address: false, name: side, idPrefix: `${side}-`, axisOrigin_ps: origin, fit, focusedKeys: true },
    );
  });
}

export const diffTracePage: ToolPage = {
  tables: false,
  render(root) {
    root.textContent = "The paired trace view needs the page's mount hook.";
  },
  mount(root, context) {
    void mountPair(root, context);
  },
};
