/**
 * The compare view's state: the diff of a base run/host against the current one, shown as
 * the tool `diff` with the base in the address (`?run=R&host=H&tool=diff&base_run=B&base_host=BH`).
 * The server's registry lists it among its analyses over several profiles (`/api/tools`'s
 * `analyses`), with the base as its two options: the shell reads them from the address,
 * sends them with the data, tables and CSV requests, and keeps them in history as any
 * tool's options. Pure functions, unit-tested in test/compare.test.ts.
 *
 * The paired trace view is the same tool with a third option, `&pair=<i>`: both runs' trace
 * viewers, stacked, each on its step of `diff.steps[i]` (a steady pair). It is an address of
 * its own (shared by copying it), and moving to another pair is a new history entry, so
 * back and forward step through the pairs looked at.
 */

import type { Diff, StepPair } from "../generated/diff";
import type { RunInfo } from "../api";
import { hostLabel } from "./names";
import { buildQuery, traceViewerAddress } from "./url";

export const COMPARE_TOOL = "diff";
export const BASE_RUN = "base_run";
export const BASE_HOST = "base_host";
export const PAIR = "pair";
/** The paired view's time scale: "" (default) one scale for both, "step" each step fills its viewer. */
export const PAIR_SCALE = "scale";
export const STEP_SCALE = "step";
/** The options that belong to the paired view, kept with the base they were chosen for. */
export const PAIR_VIEW_OPTIONS = [PAIR, PAIR_SCALE];

export interface Base {
  run: string;
  host: string;
}

/** A base as the "Compare with…" select's value (and back): "" is no comparison. */
export function baseValue(base: Base | null): string {
  return base ? new URLSearchParams({ [BASE_RUN]: base.run, [BASE_HOST]: base.host }).toString() : "";
}

export function parseBaseValue(value: string): Base | null {
  const params = new URLSearchParams(value);
  const run = params.get(BASE_RUN);
  const host = params.get(BASE_HOST);
  return run && host ? { run, host } : null;
}

/** The base in a selection's options, or null (not comparing, or no base given yet). */
export function baseOf(options: Record<string, string> | undefined): Base | null {
  const run = options?.[BASE_RUN];
  const host = options?.[BASE_HOST];
  return run && host ? { run, host } : null;
}

export function sameBase(a: Base | null, b: Base | null): boolean {
  return !!a && !!b && a.run === b.run && a.host === b.host;
}

export function baseOptions(base: Base): Record<string, string> {
  return { [BASE_RUN]: base.run, [BASE_HOST]: base.host };
}

/** Every run/host of the logdir, as the select offers them. */
export function allHosts(runs: RunInfo[]): Base[] {
  return runs.flatMap((run) => run.hosts.map((host) => ({ run: run.name, host })));
}

/** The base if the logdir has that run/host, else null (not named, or not there). */
export function findBase(runs: RunInfo[], wanted: Base | null): Base | null {
  return wanted && allHosts(runs).some((base) => sameBase(base, wanted)) ? wanted : null;
}

/**
 * The bases the compare view offers when none is named (or the one named is not there):
 * every other run/host, this run's other hosts first (two ranks of one job), then the
 * others in the logdir's order. None is picked for the user: a diff against a run chosen
 * for them (a TPU run against a CPU one) reads as a finding.
 */
export function baseCandidates(runs: RunInfo[], current: Base): Base[] {
  const others = allHosts(runs).filter((base) => !sameBase(base, current));
  return [...others.filter((base) => base.run === current.run), ...others.filter((base) => base.run !== current.run)];
}

/** "run · host", or the run alone when it has one host. */
export function baseLabel(runs: RunInfo[], base: Base): string {
  const run = runs.find((candidate) => candidate.name === base.run);
  return run && run.hosts.length === 1 ? base.run : `${base.run} · ${hostLabel(base.host)}`;
}

/** The chart's x labels: the aligned steps, "3" or "3 / 7" when the numbers differ. */
export function stepPairLabel(pair: StepPair): string {
  if (pair.base_step === null) return `– / ${pair.new_step}`;
  if (pair.new_step === null) return `${pair.base_step} / –`;
  return pair.base_step === pair.new_step ? String(pair.base_step) : `${pair.base_step} / ${pair.new_step}`;
}

export interface StepSeries {
  labels: string[];
  /** Per aligned step, each run's step time in us (null: the run has no such step). */
  base: (number | null)[];
  new: (number | null)[];
}

/** Both runs' step times, side by side as `diff.steps` aligns them (set-aside steps too). */
export function stepSeries(diff: Pick<Diff, "steps">): StepSeries {
  return { labels: diff.steps.map(stepPairLabel), base: diff.steps.map((pair) => pair.base_us), new: diff.steps.map((pair) => pair.new_us) };
}

/** Whether both steps of a pair are there and count (neither is set aside). */
export function isSteadyPair(pair: StepPair): boolean {
  return pair.base_step !== null && pair.new_step !== null && pair.base_set_aside === null && pair.new_set_aside === null && pair.base_start_ps !== null && pair.new_start_ps !== null;
}

/** The first aligned pair where both steps count (neither is set aside), or null. */
export function firstSteadyPair(diff: Pick<Diff, "steps">): StepPair | null {
  return diff.steps.find(isSteadyPair) ?? null;
}

/** Each run's steady step times (us), every step of the run that is not set aside. */
export function steadyTimes(diff: Pick<Diff, "steps">): { base: number[]; new: number[] } {
  const base = diff.steps.filter((pair) => pair.base_step !== null && pair.base_set_aside === null && pair.base_us !== null).map((pair) => pair.base_us as number);
  const next = diff.steps.filter((pair) => pair.new_step !== null && pair.new_set_aside === null && pair.new_us !== null).map((pair) => pair.new_us as number);
  return { base, new: next };
}

/** The indices into `diff.steps` of the steady pairs, the ones the paired view offers. */
export function steadyPairIndices(diff: Pick<Diff, "steps">): number[] {
  return diff.steps.flatMap((pair, index) => (isSteadyPair(pair) ? [index] : []));
}

/** The pair an address's options ask for when it is a steady one, else the first steady one; null with none. */
export function pickPair(diff: Pick<Diff, "steps">, options: Record<string, string> | undefined): number | null {
  const steady = steadyPairIndices(diff);
  const text = options?.[PAIR];
  const wanted = text !== undefined && /^\d+$/.test(text) ? Number(text) : null;
  return wanted !== null && steady.includes(wanted) ? wanted : (steady[0] ?? null);
}

/** Whether the options ask for the paired trace view (any `pair` value; a bad one falls back). */
export function isPairView(options: Record<string, string> | undefined): boolean {
  return (options?.[PAIR] ?? "") !== "";
}

/** The steady pair `delta` places from `index` among `steady` (clamped to the ends). */
export function neighbourPair(steady: readonly number[], index: number, delta: number): number | null {
  const at = steady.indexOf(index);
  if (at < 0) return steady[0] ?? null;
  return steady[Math.max(0, Math.min(steady.length - 1, at + delta))] ?? null;
}

/** The compare view's options with the paired view on pair `index` (the base kept), each step filling its viewer or not. */
export function pairOptions(base: Base, index: number, stepScale = false): Record<string, string> {
  return { ...baseOptions(base), [PAIR]: String(index), ...(stepScale ? { [PAIR_SCALE]: STEP_SCALE } : {}) };
}

/** Whether the options ask for each step to fill its viewer (else both share one time scale). */
export function isStepScale(options: Record<string, string> | undefined): boolean {
  return options?.[PAIR_SCALE] === STEP_SCALE;
}

/** The address of the paired trace view on pair `index`: `?run&host&tool=diff&base_run&base_host&pair`. */
export function pairViewAddress(current: Base, base: Base, index: number): string {
  return buildQuery({ run: current.run, host: current.host, tool: COMPARE_TOOL }, new URLSearchParams(pairOptions(base, index)));
}

/**
 * The views the paired viewers open on: each from its own step's start. On one scale (the
 * default) both are as long as the longer step, so the same offset into both steps is at
 * the same x and the shorter step ends short of the edge, its length seen against the
 * other's; with `stepScale` each is its own step, filling the width.
 */
export function pairWindows(pair: StepPair, stepScale: boolean): Record<"base" | "new", { start_ps: number; end_ps: number }> | null {
  const base = stepWindow(pair, "base");
  const next = stepWindow(pair, "new");
  if (!base || !next) return null;
  if (stepScale) return { base, new: next };
  const length = Math.max(base.end_ps - base.start_ps, next.end_ps - next.start_ps);
  return { base: { start_ps: base.start_ps, end_ps: base.start_ps + length }, new: { start_ps: next.start_ps, end_ps: next.start_ps + length } };
}

/** A run's step of a pair as a view: its start to its end, ps from its profile's start. */
export function stepWindow(pair: StepPair, side: "base" | "new"): { start_ps: number; end_ps: number } | null {
  const start = side === "base" ? pair.base_start_ps : pair.new_start_ps;
  const length = side === "base" ? pair.base_step_ps : pair.new_step_ps;
  return start === null || length === null ? null : { start_ps: start, end_ps: start + length };
}

/** Each run's trace viewer opened on its step of `pair`, or null where that run has none. */
export function pairTraceAddresses(pair: StepPair, base: Base, current: Base): { base: string | null; new: string | null } {
  const at = (run: Base, start: number | null, length: number | null): string | null =>
    start === null || length === null ? null : traceViewerAddress(run, { start_ps: String(start), end_ps: String(start + length) });
  return { base: at(base, pair.base_start_ps, pair.base_step_ps), new: at(current, pair.new_start_ps, pair.new_step_ps) };
}

/** A signed change for the overview's deltas: "+5.0%" (n/a without a base). */
export function signedPercent(value: number | null): string {
  return value === null ? "n/a" : `${value >= 0 ? "+" : ""}${value.toFixed(1)}%`;
}

/** The interval of a change in percent, "95% CI +1.2% to +9.8%", or why there is none. */
export function intervalText(change: { ci_low_percent: number | null; ci_high_percent: number | null; significant: boolean | null }): string {
  if (change.ci_low_percent === null || change.ci_high_percent === null) return change.significant === null ? "one steady step: noise not measured" : "no interval";
  return `95% CI ${signedPercent(change.ci_low_percent)} to ${signedPercent(change.ci_high_percent)}`;
}
