/**
 * The page shell: run / host / tool selectors kept in step with the address bar, the tool
 * area (progress while the server analyses, the tool's page when ready, the error when it
 * cannot be read), the notice saying what a deep link named that is not there, and the
 * capture dialog.
 *
 * Every load belongs to one selection; a newer selection aborts the older one's requests,
 * and an answer that arrives for a selection that is no longer current is dropped, so
 * fast clicking never shows one run's data under another's name.
 */

import "./style.css";
import "./tool_status.css";
import { ApiError, Cancelled, getRuns, getToolJson, getTools, sleep, type Pending, type RunInfo, type Selection, type TablesResponse, type ToolInfo } from "./api";
import { setupCapture } from "./capture";
import { destroyCharts, chartRegistry } from "./components/charts";
import { renderOptions } from "./components/options";
import { renderProgress } from "./components/progress";
import { renderEmpty } from "./components/empty";
import { renderSkipped } from "./components/skipped";
import { el, replaceChildren } from "./dom";
import { pageFor } from "./pages";
import { allHosts, baseCandidates, baseLabel, baseOf, baseOptions, baseValue, COMPARE_TOOL, findBase, PAIR_VIEW_OPTIONS, parseBaseValue, sameBase, type Base } from "./state/compare";
import { basePrompt } from "./pages/diff_pick";
import { toolMenu, whyNot, type ToolMenu } from "./state/availability";
import { optionsFromParams, sameOptions } from "./state/options";
import { hostLabels, runLabels } from "./state/names";
import { buildQuery, keptParams, notFoundNotice, parseQuery, pickHost, pickTool, resolveRunHost, sameSelection, type Wanted } from "./state/url";

const RUNS_REFRESH_MS = 5000;
/** How long a finished capture's run may take to be listed (the server re-reads the logdir at most once a second). */
const NEW_RUN_WAIT_MS = 15_000;

function byId<T extends HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (!node) throw new Error(`index.html lacks #${id}`);
  return node as T;
}

const runSelect = byId<HTMLSelectElement>("run-select");
const hostSelect = byId<HTMLSelectElement>("host-select");
const toolSelect = byId<HTMLSelectElement>("tool-select");
const compareSelect = byId<HTMLSelectElement>("compare-select");
const toolArea = byId<HTMLElement>("tool");
const statusSlot = byId<HTMLElement>("tool-status");
const content = byId<HTMLElement>("tool-content");
const logdirLabel = byId<HTMLElement>("logdir");
const skippedBox = byId<HTMLDetailsElement>("skipped");
const notice = byId<HTMLElement>("notice");

let runs: RunInfo[] = [];
let current: Selection | null = null;
/** Bumped by every selection change; an older one finding it changed gives up. */
let intent = 0;
let loading: AbortController | null = null;
/** Each run/host's tool menu; one the server had not checked yet is asked for again (see toolsFor). */
const toolsCache = new Map<string, ToolMenu>();

chartRegistry();

/** What the page asks for, with the address's other parameters (a tool's options among them). */
interface WantedHere extends Wanted {
  /** The tool's options as they are to be; when absent, read from `params`. */
  options?: Record<string, string>;
  params?: URLSearchParams;
  /** Read from the address (a deep link, back/forward): what it names that is missing is said. */
  fromAddress?: boolean;
}

function fromAddress(): WantedHere {
  return { ...parseQuery(location.search), params: new URLSearchParams(location.search), fromAddress: true };
}

/** Shows `text` above the tool area, or hides the notice when it is "". */
function setNotice(text: string): void {
  notice.textContent = text;
  notice.hidden = text === "";
}

/**
 * The tool menu of a run/host. Which tools have nothing to show is known once the profile
 * is analysed: until the server says it checked, the menu is asked for again (after the
 * tool's data came, see `load`), and kept for good once it has.
 */
async function toolsFor(run: string, host: string): Promise<ToolMenu> {
  const key = `${run}\u0000${host}`;
  const known = toolsCache.get(key);
  if (known?.checked) return known;
  const answer = await getTools(run, host);
  // The registry's tools (one profile each), then its analyses over several (the compare
  // view: two profiles; the distributed view: the run's every host).
  const menu = toolMenu(answer, [...answer.tools, ...answer.analyses], allHosts(runs).length);
  toolsCache.set(key, menu);
  return menu;
}

/** Greys out the menu's tools with nothing to show, each with its reason on hover and for screen readers. */
function markUnavailable(menu: ToolMenu): void {
  for (const option of Array.from(toolSelect.options)) {
    const why = whyNot(menu, option.value);
    option.disabled = why !== "";
    option.title = why === "" ? option.value : `${option.textContent ?? option.value}: ${why}`;
    if (why === "") option.removeAttribute("aria-description");
    else option.setAttribute("aria-description", why);
  }
}

/**
 * Rebuilds a select's options only when they changed (rebuilding closes an open dropdown).
 * Values are the ids sent to the API; a label that is not its value (a shortened name) has
 * its value as the option's title, shown on hover.
 */
function fillSelect(select: HTMLSelectElement, values: string[], selected: string, labels: string[] = values): void {
  const existing = Array.from(select.options, (option) => [option.value, option.textContent]);
  if (existing.length !== values.length || existing.some(([value, text], index) => value !== values[index] || text !== (labels[index] ?? values[index]))) {
    select.replaceChildren(
      ...values.map((value, index) => {
        const label = labels[index] ?? value;
        return el("option", label === value ? { value } : { value, title: value }, label);
      }),
    );
  }
  select.value = selected;
  select.disabled = values.length === 0;
}

/** The runs selector: full names as values, short ones as labels (see state/names). */
function fillRuns(selected: string): void {
  const names = runs.map((candidate) => candidate.name);
  fillSelect(runSelect, names, selected, runLabels(names));
}

function fillHosts(hosts: string[], selected: string): void {
  fillSelect(hostSelect, hosts, selected, hostLabels(hosts));
}

/** The "Compare with…" select: no comparison, or any run/host of the logdir as the base. */
function fillCompare(selection: Selection | null): void {
  const bases = allHosts(runs);
  const base = selection?.tool === COMPARE_TOOL ? baseOf(selection.options) : null;
  fillSelect(compareSelect, ["", ...bases.map(baseValue)], baseValue(base), ["—", ...bases.map((candidate) => baseLabel(runs, candidate))]);
  compareSelect.disabled = bases.length < 2;
}

function showSelection(selection: Selection, menu: ToolMenu): void {
  const tools = menu.tools;
  fillCompare(selection);
  const run = runs.find((candidate) => candidate.name === selection.run);
  fillRuns(selection.run);
  fillHosts(run?.hosts ?? [selection.host], selection.host);
  fillSelect(
    toolSelect,
    tools.map((tool) => tool.name),
    selection.tool,
    tools.map((tool) => tool.title),
  );
  markUnavailable(menu);
}

/** The registry entry of the selected tool (its options), once the tools are known. */
function toolInfo(selection: Selection): ToolInfo | undefined {
  return toolsCache.get(`${selection.run}\u0000${selection.host}`)?.tools.find((tool) => tool.name === selection.tool);
}

function writeHistory(selection: Selection, mode: "push" | "replace"): void {
  // The address's other state stays (a deep link's), but the tool's options are the selection's.
  const extra = keptParams(location.search, selection) ?? new URLSearchParams();
  for (const option of toolInfo(selection)?.options ?? []) extra.delete(option.name);
  for (const [name, value] of Object.entries(selection.options ?? {})) extra.set(name, value);
  const url = `${location.pathname}${buildQuery(selection, extra)}`;
  if (url === `${location.pathname}${location.search}`) return;
  if (mode === "push") history.pushState(selection, "", url);
  else history.replaceState(selection, "", url);
}

function setState(state: "loading" | "ready" | "error" | "empty"): void {
  toolArea.setAttribute("data-state", state);
}

/** The load whose page mounted itself (the trace viewer): aborting it tears the page down. */
let mounted: AbortController | null = null;

function showError(message: string): void {
  // A self-mounted page leaves with its content (its window listeners and requests too).
  mounted?.abort();
  mounted = null;
  destroyCharts();
  content.replaceChildren();
  replaceChildren(statusSlot, el("div", { id: "error", role: "alert" }, [el("strong", {}, "Error: "), el("span", { class: "error-message" }, message)]));
  setState("error");
}

/**
 * A tool's error inside the tool area, under its options bar (a bad option, a profile the
 * tool rejects): the controls stay, so a wrong option can be corrected where it was set.
 */
function showToolError(selection: Selection, message: string, setOptions: (options: Record<string, string>) => void): void {
  const info = toolInfo(selection);
  const bar = info && info.name !== COMPARE_TOOL ? renderOptions(info, selection.options ?? {}, undefined, setOptions) : null;
  if (!bar) return showError(message);
  destroyCharts();
  statusSlot.replaceChildren();
  content.replaceChildren(bar, el("div", { id: "error", role: "alert" }, [el("strong", {}, "Error: "), el("span", { class: "error-message" }, message)]));
  setState("error");
}

/** A tool with nothing to show for this profile: its reason in one line, in place of empty charts. */
function showUnavailable(selection: Selection, why: string): void {
  destroyCharts();
  statusSlot.replaceChildren();
  const title = toolInfo(selection)?.title ?? selection.tool;
  content.replaceChildren(el("p", { id: "tool-unavailable", class: "tool-unavailable", role: "status" }, `${title}: ${why}.`));
  setState("ready");
}

/** A log directory with no runs yet: where the page looks, and how to put a run there. */
function showEmpty(): void {
  mounted?.abort();
  mounted = null;
  destroyCharts();
  statusSlot.replaceChildren();
  content.replaceChildren(renderEmpty(logdirLabel.textContent ?? ""));
  setState("empty");
}

function showPending(pending: Pending): void {
  const existing = document.getElementById("progress");
  const next = renderProgress(pending);
  if (existing) existing.replaceWith(next);
  else replaceChildren(statusSlot, next);
}

/**
 * Settles on a selection from what is wanted (address, a select, a new capture), falling
 * back to the first run / host / tool, then loads it. `mode` says how the address bar
 * follows: a user's choice is a new history entry, a correction or back/forward is not.
 */
async function applyWanted(wanted: WantedHere, mode: "push" | "replace", force = false): Promise<void> {
  const mine = ++intent;
  const runHost = resolveRunHost(runs, wanted);
  if (!runHost) {
    loading?.abort();
    current = null;
    setNotice("");
    toolArea.setAttribute("data-tool", "");
    for (const select of [runSelect, hostSelect, toolSelect, compareSelect]) fillSelect(select, [], "");
    showEmpty();
    return;
  }
  // Say "loading" at once, before the tools request: whoever changed a select and then
  // waits for "ready" must not take the previous view's "ready" for the new one.
  const stateBefore = toolArea.getAttribute("data-state") ?? "loading";
  const changing =
    force ||
    !current ||
    runHost.run !== current.run ||
    runHost.host !== current.host ||
    (wanted.tool !== undefined && wanted.tool !== current.tool) ||
    (wanted.options !== undefined && !sameOptions(wanted.options, current.options));
  if (changing) setState("loading");
  let menu: ToolMenu;
  try {
    menu = await toolsFor(runHost.run, runHost.host);
  } catch (error) {
    if (mine !== intent) return;
    showError(error instanceof Error ? error.message : String(error));
    return;
  }
  if (mine !== intent) return;
  const tools = menu.tools;
  const tool = pickTool(
    tools.map((candidate) => candidate.name),
    wanted.tool,
  );
  const info = tools.find((candidate) => candidate.name === tool);
  let options = wanted.options ?? (wanted.params && tool === wanted.tool ? optionsFromParams(info, wanted.params) : {});
  if (tool === COMPARE_TOOL) {
    // Compare needs a base: the one named, else the one the compare view had (another run
    // chosen with the runs selector keeps it); none picked for the user otherwise.
    const named = baseOf(options);
    const base = findBase(runs, named ?? (current?.tool === COMPARE_TOOL ? baseOf(current.options) : null));
    if (!base) {
      const candidates = baseCandidates(runs, runHost);
      if (candidates.length === 0) {
        showError("Compare needs two profiles: this log directory has only one.");
        return;
      }
      const selection: Selection = { ...runHost, tool };
      showSelection(selection, menu);
      setNotice("");
      writeHistory(selection, mode);
      showBasePrompt(selection, named, candidates);
      return;
    }
    // The paired trace view's options go with the base they were picked for.
    const pairView = sameBase(base, baseOf(options)) ? PAIR_VIEW_OPTIONS.filter((name) => options[name]) : [];
    options = { ...baseOptions(base), ...Object.fromEntries(pairView.map((name) => [name, options[name] as string])) };
  }
  const selection: Selection = { ...runHost, tool, ...(Object.keys(options).length > 0 ? { options } : {}) };
  showSelection(selection, menu);
  // A deep link's missing parts are said until the next choice (a user's selection clears it).
  setNotice(wanted.fromAddress ? notFoundNotice(wanted, selection) : "");
  writeHistory(selection, mode);
  if (force || !sameSelection(selection, current) || stateBefore === "error" || stateBefore === "empty") {
    void load(selection);
  } else if (changing) {
    // The wanted tool did not exist and fell back to the one shown: nothing to reload.
    setState(stateBefore as "loading" | "ready" | "error");
  }
}

/** The compare view without a base: which run to compare with (pages/diff_pick.ts). */
function showBasePrompt(selection: Selection, named: Base | null, candidates: Base[]): void {
  loading?.abort();
  loading = null;
  mounted?.abort();
  mounted = null;
  current = selection;
  destroyCharts();
  toolArea.setAttribute("data-tool", selection.tool);
  document.title = `${selection.tool} · ${selection.run} — stepscope`;
  statusSlot.replaceChildren();
  const choose = (base: Base): void => void applyWanted({ ...selection, options: baseOptions(base) }, "push");
  content.replaceChildren(el("div", { id: "tool-page" }, basePrompt(runs, selection, named, candidates, choose)));
  setState("ready");
}

async function load(selection: Selection): Promise<void> {
  loading?.abort();
  const controller = new AbortController();
  loading = controller;
  current = selection;
  destroyCharts();
  toolArea.setAttribute("data-tool", selection.tool);
  setState("loading");
  document.title = `${selection.tool} · ${selection.run} — stepscope`;
  statusSlot.replaceChildren(el("p", { class: "loading" }, "Loading…"));
  content.replaceChildren();
  const setOptions = (options: Record<string, string>): void => void applyWanted({ ...selection, options }, "push");
  const known = whyNot(toolsCache.get(`${selection.run}\u0000${selection.host}`), selection.tool);
  if (known !== "") return showUnavailable(selection, known);
  const page = pageFor(selection.tool, selection.options);
  const onPending = (pending: Pending): void => {
    if (loading === controller) showPending(pending);
  };
  if (page.mount) {
    mounted = controller;
    const mine = (): boolean => loading === controller && !controller.signal.aborted;
    page.mount(content, {
      selection,
      signal: controller.signal,
      onPending,
      ready: () => {
        if (!mine()) return;
        statusSlot.replaceChildren();
        setState("ready");
        void checkedMenu(selection, controller);
      },
      fail: (message) => {
        if (mine()) showError(message);
      },
      setOptions,
    });
    return;
  }
  try {
    const data = await getToolJson<unknown>("data", selection, onPending, controller.signal);
    const tables = page.tables ? (await getToolJson<TablesResponse>("tables", selection, onPending, controller.signal)).tables : [];
    if (loading !== controller) return;
    // The profile is analysed now: the menu says which tools have nothing to show.
    const why = await checkedMenu(selection, controller);
    if (loading !== controller) return;
    if (why !== "") return showUnavailable(selection, why);
    statusSlot.replaceChildren();
    const info = toolInfo(selection);
    // The compare view's options (its base) are set by the "Compare with…" select.
    const bar = info && info.name !== COMPARE_TOOL && renderOptions(info, selection.options ?? {}, data, setOptions);
    const root = el("div", { id: "tool-page" });
    content.replaceChildren(...(bar ? [bar, root] : [root]));
    page.render(root, { data, tables, selection, setOptions });
    setState("ready");
  } catch (error) {
    if (error instanceof Cancelled || loading !== controller) return;
    if (error instanceof ApiError) showToolError(selection, error.message, setOptions);
    else {
      console.error(error);
      showError(`could not show ${selection.tool}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}

/**
 * The menu once the selection's profile is analysed (asked again if the last answer came
 * before), greyed out where tools have nothing to show; what it says of the selected tool.
 */
async function checkedMenu(selection: Selection, controller: AbortController): Promise<string> {
  try {
    const menu = await toolsFor(selection.run, selection.host);
    if (loading !== controller) return "";
    markUnavailable(menu);
    return whyNot(menu, selection.tool);
  } catch (error) {
    console.warn("stepscope: could not list the tools", error);
    return "";
  }
}

/** Re-reads the runs (new captures and new profiles appear without a reload). */
async function refreshRuns(): Promise<void> {
  const answer = await getRuns();
  logdirLabel.textContent = answer.logdir;
  logdirLabel.title = answer.logdir;
  renderSkipped(skippedBox, answer.skipped);
  const changed = JSON.stringify(answer.runs) !== JSON.stringify(runs);
  runs = answer.runs;
  if (!changed) return;
  if (current) {
    const run = runs.find((candidate) => candidate.name === current?.run);
    fillRuns(current.run);
    if (run) fillHosts(run.hosts, current.host);
    fillCompare(current);
  } else if (runs.length > 0) {
    await applyWanted(fromAddress(), "replace");
  }
}

function scheduleRefresh(): void {
  window.setTimeout(() => {
    refreshRuns()
      .catch((error: unknown) => console.warn("stepscope: could not refresh runs", error))
      .finally(scheduleRefresh);
  }, RUNS_REFRESH_MS);
}

/** Moves to another run as a new history entry (the runs selector, a finished capture). */
function selectRun(name: string): Promise<void> {
  const run = runs.find((candidate) => candidate.name === name);
  // Keep the host and tool when the new run has them (comparing the same host across runs).
  const host = run ? pickHost(run, current?.host) : undefined;
  return applyWanted({ run: name, host, tool: current?.tool }, "push");
}

/** Refreshes the runs until `name` is listed; false when it is not within `timeoutMs`. */
async function waitForRun(name: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await refreshRuns();
    } catch (error) {
      console.warn("stepscope: could not refresh runs", error);
    }
    if (runs.some((candidate) => candidate.name === name)) return true;
    if (Date.now() >= deadline) return false;
    await sleep(500);
  }
}

runSelect.addEventListener("change", () => {
  void selectRun(runSelect.value);
});
hostSelect.addEventListener("change", () => {
  void applyWanted({ run: current?.run ?? runSelect.value, host: hostSelect.value, tool: current?.tool }, "push");
});
toolSelect.addEventListener("change", () => {
  void applyWanted({ run: current?.run ?? runSelect.value, host: current?.host ?? hostSelect.value, tool: toolSelect.value }, "push");
});
compareSelect.addEventListener("change", () => {
  const base = parseBaseValue(compareSelect.value);
  const here = { run: current?.run ?? runSelect.value, host: current?.host ?? hostSelect.value };
  // Leaving the comparison goes back to the overview of the current profile.
  if (base) void applyWanted({ ...here, tool: COMPARE_TOOL, options: baseOptions(base) }, "push");
  else void applyWanted({ ...here, tool: current?.tool === COMPARE_TOOL ? undefined : current?.tool }, "push");
});
window.addEventListener("popstate", () => {
  void applyWanted(fromAddress(), "replace");
});

// A finished capture closes its dialog onto the run it wrote, selected as the runs selector does.
setupCapture(async (run) => {
  if (!(await waitForRun(run, NEW_RUN_WAIT_MS))) return false;
  await selectRun(run);
  return true;
});

async function start(): Promise<void> {
  try {
    const answer = await getRuns();
    runs = answer.runs;
    logdirLabel.textContent = answer.logdir;
    logdirLabel.title = answer.logdir;
    renderSkipped(skippedBox, answer.skipped);
  } catch (error) {
    // The runs refresh keeps trying; the first answer it gets loads the page.
    showError(`could not list runs: ${error instanceof Error ? error.message : String(error)}`);
    scheduleRefresh();
    return;
  }
  await applyWanted(fromAddress(), "replace");
  scheduleRefresh();
}

void start();
