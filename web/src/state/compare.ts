/**
 * The compare view's state: the diff of a base run/host against the current one, shown as
 * the tool `diff` with the base in the address (`?run=R&host=H&tool=diff&base_run=B&base_host=BH`).
 * The server's registry lists only single-profile tools, so the page adds this one to the
 * menu itself (`withCompare`), with the base as its two options: the shell reads them from
 * the address, sends them with the data, tables and CSV requests, and keeps them in history
 * as any tool's options. Pure functions, unit-tested in test/compare.test.ts.
 */

import type { Diff, StepPair } from "../generated/diff";
import type { RunInfo, ToolInfo } from "../api";
import { traceViewerAddress } from "./url";

export const COMPARE_TOOL = "diff";
export const BASE_RUN = "base_run";
export const BASE_HOST = "base_host";

function baseOption(name: string, help: string): ToolInfo["options"][number] {
  return { name, type: "string", default: "", help, minimum: null, choices: [], choices_from: null };
}

export const COMPARE_INFO: ToolInfo = {
  name: COMPARE_TOOL,
  title: "Compare",
  output: "tables",
  description: "What changed from a base run/host to this one (stepscope diff).",
  options: [baseOption(BASE_RUN, "the run to compare against"), baseOption(BASE_HOST, "its host")],
};

/** The registry's tools with Compare after them (once), for the tool menu. */
export function withCompare(tools: ToolInfo[]): ToolInfo[] {
  return tools.some((tool) => tool.name === COMPARE_TOOL) ? tools : [...tools, COMPARE_INFO];
}

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

export function baseOptions(base: Base): Record<string, string> {
  return { [BASE_RUN]: base.run, [BASE_HOST]: base.host };
}

/** Every run/host of the logdir, as the select offers them. */
export function allHosts(runs: RunInfo[]): Base[] {
  return runs.flatMap((run) => run.hosts.map((host) => ({ run: run.name, host })));
}

/**
 * The base to compare with when none is named: the given one if it exists, else the
 * first other host of the same run (two ranks, two hosts), else the first other run/host;
 * null when the logdir has only the current one.
 */
export function pickBase(runs: RunInfo[], current: Base, wanted: Base | null): Base | null {
  const hosts = allHosts(runs);
  if (wanted && hosts.some((base) => base.run === wanted.run && base.host === wanted.host)) return wanted;
  const others = hosts.filter((base) => base.run !== current.run || base.host !== current.host);
  return others.find((base) => base.run === current.run) ?? others[0] ?? null;
}

/** "run · host", or the run alone when it has one host. */
export function baseLabel(runs: RunInfo[], base: Base): string {
  const run = runs.find((candidate) => candidate.name === base.run);
  return run && run.hosts.length === 1 ? base.run : `${base.run} · ${base.host}`;
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

/** The first aligned pair where both steps count (neither is set aside), or null. */
export function firstSteadyPair(diff: Pick<Diff, "steps">): StepPair | null {
  return diff.steps.find((pair) => pair.base_step !== null && pair.new_step !== null && pair.base_set_aside === null && pair.new_set_aside === null) ?? null;
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
