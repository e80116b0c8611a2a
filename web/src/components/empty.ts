/**
 * What the tool area shows while the log directory holds no runs: not an error (a server
 * started before the job writes its first profile is the usual case), but where the page
 * looks and the two ways to put a run there. The page lists new runs within seconds.
 */

import { el } from "../dom";
import "./empty.css";

/** The empty state for `logdir` (the path the server watches, as `/api/runs` gives it). */
export function renderEmpty(logdir: string): HTMLElement {
  const where = logdir || "the log directory";
  return el("section", { id: "empty-state", class: "empty-state", "aria-labelledby": "empty-title" }, [
    el("h2", { id: "empty-title" }, "No runs yet"),
    el("p", {}, ["stepscope is watching ", el("code", { class: "empty-logdir" }, where), "; a run appears here as soon as a profile is written there."]),
    el("p", {}, "Capture one from your training script:"),
    el("pre", {}, el("code", {}, `import stepscope\n\nwith stepscope.profile(${JSON.stringify(where)}):\n    for step in range(5):\n        with stepscope.step(step):\n            train_step()`)),
    el("p", {}, ["or from a running job with ", el("strong", {}, "Capture profile"), " (above), or copy a profile into it (", el("code", {}, "*.xplane.pb"), ", ", el("code", {}, "*.pt.trace.json.gz"), ")."]),
  ]);
}
