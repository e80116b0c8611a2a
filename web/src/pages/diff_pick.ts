/**
 * The compare view without a base: `tool=diff` with no `base_run`/`base_host`, or with a
 * run/host the logdir does not hold. Rather than diffing against a run picked for the
 * user (the first one, a TPU run against a CPU one, reads as a finding), the page asks
 * which run to compare with: one link per candidate (this run's other hosts first, see
 * `baseCandidates`), each the compare view's own address, beside the "Compare with…"
 * select that does the same.
 */

import type { RunInfo, Selection } from "../api";
import { card, note } from "../components/metric";
import { el } from "../dom";
import { baseLabel, baseOptions, COMPARE_TOOL, type Base } from "../state/compare";
import { buildQuery } from "../state/url";

/** The compare view's address with `base` (the link each candidate is). */
export function compareAddress(current: Pick<Selection, "run" | "host">, base: Base): string {
  return buildQuery({ run: current.run, host: current.host, tool: COMPARE_TOOL }, new URLSearchParams(baseOptions(base)));
}

/** Why there is no diff yet, in one line: none named, or the named one is not in the logdir. */
export function basePromptText(named: Base | null): string {
  const missing = named ? `There is no run/host ${named.run} · ${named.host} in this log directory. ` : "";
  return `${missing}Compare needs a base: pick the run to compare this one with, here or in "Compare with…" above.`;
}

/** The prompt: the line, then a link per candidate base; `choose` follows one. */
export function basePrompt(runs: RunInfo[], current: Selection, named: Base | null, candidates: Base[], choose: (base: Base) => void): HTMLElement {
  const links = candidates.map((base) => {
    const link = el("a", { href: compareAddress(current, base), "data-base-run": base.run, "data-base-host": base.host }, baseLabel(runs, base));
    link.addEventListener("click", (event) => {
      if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return; // a new tab or window: the browser's
      event.preventDefault();
      choose(base);
    });
    return el("li", {}, link);
  });
  return card("Compare with…", [note(basePromptText(named), "note", { id: "compare-pick-text" }), el("ul", { class: "base-list" }, links)], { id: "compare-pick-base" }, true);
}
