/**
 * The JSON API of docs/dashboard.md, typed, and the tools' JSON forms (generated from the
 * tool registry's schemas). The page talks to the server only through here.
 *
 * Times are microseconds (`*_us`); a value a profile cannot support is null.
 */

import { parseJson } from "./rawjson";
import type { ToolsAnswer as ToolsResponse } from "./generated/tools";

// ---------------------------------------------------------------- API envelopes

export interface RunInfo {
  name: string;
  hosts: string[];
}

/** A file of the logdir that is no run's profile, and why (nothing is left out silently). */
export interface SkippedFile {
  path: string;
  why: string;
}

export interface RunsResponse {
  logdir: string;
  runs: RunInfo[];
  skipped: SkippedFile[];
}

// GET /api/tools: the registry's entries (generated from its schema, like the tools' JSON).
export type { ToolsAnswer as ToolsResponse, ToolInfo, OptionInfo } from "./generated/tools";

/**
 * 202 body: the profile is still being analysed. `"a" | "b" | (string & {})`, here and below:
 * the values known today, open to new ones (a plain `| string` would swallow the literals).
 */
export interface Pending {
  state: "queued" | "loading" | "analysing" | (string & {});
  progress: number;
  message: string;
}

export type CellValue = number | string | boolean | null;

export interface ApiColumn {
  key: string;
  label: string;
  kind: "number" | "string" | "bool" | (string & {});
}

export interface ApiTable {
  name: string;
  columns: ApiColumn[];
  rows: CellValue[][];
}

export interface TablesResponse {
  tables: ApiTable[];
}

export interface CaptureRequest {
  addresses: string[];
  duration_ms?: number;
  delay_ms?: number;
  host_tracer_level?: number;
  python_tracer_level?: number;
  device_tracer_level?: number;
  attempts?: number;
}

export interface CaptureResult {
  address: string;
  ok: boolean;
  host: string | null;
  message: string;
  attempts: number;
}

export interface CaptureStatus {
  id: string;
  state: "running" | "done" | "failed";
  elapsed_ms: number;
  duration_ms: number;
  run: string | null;
  results: CaptureResult[];
}

/** Which profile (and tool) a request is about. */
export interface Selection {
  run: string;
  host: string;
  tool: string;
  /** The tool's options that differ from their defaults, sent as query parameters. */
  options?: Record<string, string>;
}

/** run, host, tool, then the tool's options: the query of a tool's data, tables and CSV. */
export function toolParams(selection: Selection, extra: Record<string, string> = {}): Record<string, string> {
  return { run: selection.run, host: selection.host, tool: selection.tool, ...selection.options, ...extra };
}

// ---------------------------------------------------------------- tool JSON forms

// Generated from the registry's JSON Schema of each tool (src/generated/, `make schemas`).
export type { OverviewPage, OverviewStep, SetAsideStep, StepStats as Stats, DeviceBusy, TopOp, Environment, Evidence, PredictedGain, Recommendation, Flops, GpuMetrics, KernelSlice } from "./generated/overview_page";
export type { InputPipelineAnalyzer as InputPipeline, InputStep, InputOp } from "./generated/input_pipeline_analyzer";
export type { FrameworkOpStats, OpRow as FrameworkOpRow, OpTableRow as IdleRow } from "./generated/framework_op_stats";
export type { KernelStats, KernelRow } from "./generated/kernel_stats";
export type { OpProfile, OpProfileNode as OpNode } from "./generated/op_profile";
export type { FlameGraph, FlameNode } from "./generated/flame_graph";
export type { MemoryProfile, MemoryDevice, MemoryPoint } from "./generated/memory_profile";
export type { MemoryViewer, ProgramRow as MemoryViewerProgram, PointRow as MemoryViewerPoint, BufferRow as MemoryViewerBuffer } from "./generated/memory_viewer";
export type { GraphViewer, GraphNode, GraphEdge } from "./generated/graph_viewer";
export type { CriticalPath, StepPath, Segments as PathSegments, WhatIf } from "./generated/critical_path";

// ---------------------------------------------------------------- calls

/** A 4xx/5xx answer, carrying the server's one-line `error`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** A fetch abandoned because the selection it was for is no longer current. */
export class Cancelled extends Error {
  constructor() {
    super("cancelled");
    this.name = "Cancelled";
  }
}

/**
 * Where the API is, relative to the page: `stepscope serve` serves the page at `/` and the
 * API at `/api/`, TensorBoard at `/data/plugin/stepscope/index.html` and
 * `/data/plugin/stepscope/api/` (under its `--path_prefix`, or a notebook's proxy prefix,
 * in front of both). A relative address reaches the API in every case; an absolute
 * `/api/...` would leave TensorBoard's plugin prefix.
 */
export const API_ROOT = "api/";

/** "api/data?run=..&host=..&tool=.." for `endpoint` "data" (and `extra` parameters), in the documented order. */
export function apiUrl(endpoint: string, params: Record<string, string> = {}): string {
  const query = new URLSearchParams(params).toString();
  return query ? `${API_ROOT}${endpoint}?${query}` : `${API_ROOT}${endpoint}`;
}

/** The CSV export address of one table (the server sends it as an attachment). */
export function csvUrl(selection: Selection, table: string): string {
  return apiUrl("csv", toolParams(selection, { table }));
}

/** The flame graph's stacks as a file (`stepscope flame`'s formats) for the selection's options. */
export function flameUrl(selection: Selection, format: "collapsed" | "speedscope"): string {
  return apiUrl("flame", toolParams(selection, { format }));
}

export async function errorOf(response: Response): Promise<ApiError> {
  let message = `${response.status} ${response.statusText}`.trim();
  try {
    const body = (await response.json()) as { error?: unknown };
    if (typeof body.error === "string") message = body.error;
  } catch {
    // Not JSON (a proxy's page): the status line is all there is.
  }
  return new ApiError(response.status, message);
}

async function getJson<T>(url: string, signal?: AbortSignal): Promise<T> {
  const response = await fetch(url, { signal, headers: { Accept: "application/json" } });
  if (!response.ok) throw await errorOf(response);
  return parseJson(await response.text()) as T;
}

export function getRuns(signal?: AbortSignal): Promise<RunsResponse> {
  return getJson<RunsResponse>(apiUrl("runs"), signal);
}

export function getTools(run: string, host: string, signal?: AbortSignal): Promise<ToolsResponse> {
  return getJson<ToolsResponse>(apiUrl("tools", { run, host }), signal);
}

export const POLL_MS = 500;

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Cancelled());
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new Cancelled());
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * GET /api/data or /api/tables, asking again every POLL_MS while the server answers 202
 * (the profile is being analysed in its worker); `onPending` sees each progress report.
 * Aborting `signal` rejects with Cancelled, so a superseded selection stops polling.
 */
export async function getToolJson<T>(
  endpoint: "data" | "tables",
  selection: Selection,
  onPending: (pending: Pending) => void,
  signal: AbortSignal,
): Promise<T> {
  const url = apiUrl(endpoint, toolParams(selection));
  for (;;) {
    let response: Response;
    try {
      response = await fetch(url, { signal, headers: { Accept: "application/json" } });
    } catch (error) {
      if (signal.aborted) throw new Cancelled();
      throw error;
    }
    if (signal.aborted) throw new Cancelled();
    if (response.status === 202) {
      onPending((await response.json()) as Pending);
      await sleep(POLL_MS, signal);
      continue;
    }
    if (!response.ok) throw await errorOf(response);
    // parseJson keeps numbers' JSON text for data-value (see rawjson.ts).
    return parseJson(await response.text()) as T;
  }
}

export async function startCapture(request: CaptureRequest): Promise<{ id: string }> {
  const response = await fetch(apiUrl("capture"), {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify(request),
  });
  if (!response.ok) throw await errorOf(response);
  return (await response.json()) as { id: string };
}

export function getCapture(id: string, signal?: AbortSignal): Promise<CaptureStatus> {
  return getJson<CaptureStatus>(apiUrl(`capture/${encodeURIComponent(id)}`), signal);
}
