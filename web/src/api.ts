/**
 * The JSON API of docs/dashboard.md, typed, and the tools' JSON forms (the `to_json()` of
 * each module in stepscope/analysis). The page talks to the server only through here.
 *
 * Times are microseconds (`*_us`); a value a profile cannot support is null.
 */

import { parseJson } from "./rawjson";

// ---------------------------------------------------------------- API envelopes

export interface RunInfo {
  name: string;
  hosts: string[];
}

export interface RunsResponse {
  logdir: string;
  runs: RunInfo[];
}

export interface ToolsResponse {
  tools: string[];
}

/** 202 body: the profile is still being analysed. */
export interface Pending {
  state: "queued" | "loading" | "analysing" | string;
  progress: number;
  message: string;
}

export type CellValue = number | string | boolean | null;

export interface ApiColumn {
  key: string;
  label: string;
  kind: "number" | "string" | "bool" | string;
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
}

// ---------------------------------------------------------------- tool JSON forms

export interface Breakdown {
  [key: string]: number;
}

export interface OverviewStep {
  step: number;
  start_us: number;
  step_time_us: number;
  step_time_ps: number;
  breakdown: Breakdown;
  device_time_launched_us?: number | null;
  /** "compile" | "outlier" when the step is left out of the summary, else null. */
  set_aside?: string | null;
}

export interface SetAsideStep {
  step: number;
  reason: string;
  step_time_us: number;
  compile_us: number;
  baseline_us: number;
}

export interface Stats {
  mean: number | null;
  median?: number | null;
  stddev: number | null;
  min: number | null;
  max: number | null;
}

export interface DeviceBusy {
  device?: string;
  busy_time_us: number | null;
  idle_time_us: number | null;
  active_span_us: number | null;
  busy_percent: number | null;
  window_us: number | null;
  busy_percent_of_window: number | null;
}

export interface TopOp {
  self_time_percent: number | null;
  cumulative_self_time_percent: number | null;
  type: string;
  name: string;
  gflops_per_second: number | null;
}

export interface Environment {
  host: string;
  hosts?: number;
  device_type: string;
  device_count: number;
  devices: string[];
  framework: string;
  versions: Record<string, string>;
  source_format: string;
}

export interface Evidence {
  finding: string;
  text: string;
  /** The tool that shows it (a registry name, or "trace_viewer"). */
  tool: string;
}

export interface Recommendation {
  verdict?: string;
  input_bound: string;
  input_percent: number | null;
  kernel_launch_percent: number | null;
  collectives_percent?: number | null;
  host_percent?: number | null;
  summary: string;
  next_steps: string[];
  evidence?: Evidence[];
  set_aside?: string;
}

export interface Flops {
  device_flops: number | null;
  gflops_per_second: number | null;
  peak_tflops_per_second: number | null;
  utilization_percent: number | null;
}

export interface OverviewPage {
  step_source: string;
  steps_inferred: boolean;
  steps: OverviewStep[];
  step_time_us: Stats;
  step_time_us_all?: Stats;
  breakdown_percent: Record<string, number | null>;
  breakdown_percent_all?: Record<string, number | null>;
  set_aside?: SetAsideStep[];
  device: DeviceBusy;
  devices: DeviceBusy[];
  top_ops: TopOp[];
  environment: Environment;
  recommendation: Recommendation;
  flops?: Flops;
}

export interface InputStep {
  step: number;
  input_us: number;
  step_time_us: number;
  input_percent: number;
}

export interface InputOp {
  name: string;
  count: number;
  total_ms: number;
  total_percent: number;
  self_ms: number;
  self_percent: number;
  category: string;
}

export interface InputPipeline {
  step_source: string;
  steps_inferred: boolean;
  steps: InputStep[];
  input_percent: Stats;
  verdict: "highly" | "moderately" | "not" | string;
  host_breakdown_us: Record<string, number>;
  input_ops: InputOp[];
  note: string;
}

export interface FrameworkOpRow {
  rank: number;
  host_or_device: "Host" | "Device" | string;
  type: string;
  name: string;
  occurrences: number;
  total_time_us: number;
  total_self_time_us: number;
  self_time_percent?: number | null;
  self_time_percent_with_idle?: number | null;
  [key: string]: CellValue | undefined;
}

export interface FrameworkOpStats {
  rows: FrameworkOpRow[];
  idle_rows: FrameworkOpRow[];
}

export interface KernelStats {
  rows: Record<string, CellValue>[];
  total_kernel_time_us: number;
  total_kernel_time_ps: number;
  devices: string[];
}

export interface OpNode {
  name: string;
  kind: "root" | "program" | "category" | "op" | string;
  time_ps: number;
  time_us: number;
  time_percent: number;
  time_percent_with_idle: number;
  occurrences: number;
  flops: number | null;
  bytes_accessed: number | null;
  gflops_per_second: number | null;
  flops_utilization: number | null;
  memory_bandwidth_gb_per_second: number | null;
  color_hint: number | null;
  expression: string | null;
  shape: string | null;
  folded: number;
  children: OpNode[];
}

export interface OpProfile {
  device: string;
  devices: string[];
  side: string;
  top_n: number;
  exclude_idle: boolean;
  idle_time_ps: number;
  idle_time_us: number;
  peak_teraflops_per_second: number | null;
  root: OpNode;
}

export interface MemoryPoint {
  time_us: number;
  allocated_bytes: number;
  reserved_bytes: number | null;
}

export interface MemoryDevice {
  device: string;
  allocated_from: string;
  events: number;
  frees_matched_by: string;
  peak_allocated_bytes: number;
  peak_reserved_bytes: number | null;
  lifetime_peak_bytes: number | null;
  peak_time_us: number;
  peak_time_ps: number;
  peak_step: number | null;
  timeline: MemoryPoint[];
  step_peaks: { step: number; peak_allocated_bytes: number }[];
  peak_holders: { op: string; bytes: number; allocations: number }[];
}

export interface MemoryProfile {
  devices: MemoryDevice[];
  note: string;
}

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

/** "/api/data?run=..&host=..&tool=.." (and `extra` parameters), in the documented order. */
export function apiUrl(path: string, params: Record<string, string>): string {
  const query = new URLSearchParams(params).toString();
  return query ? `${path}?${query}` : path;
}

/** The CSV export address of one table (the server sends it as an attachment). */
export function csvUrl(selection: Selection, table: string): string {
  return apiUrl("/api/csv", { run: selection.run, host: selection.host, tool: selection.tool, table });
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
  return getJson<RunsResponse>("/api/runs", signal);
}

export function getTools(run: string, host: string, signal?: AbortSignal): Promise<ToolsResponse> {
  return getJson<ToolsResponse>(apiUrl("/api/tools", { run, host }), signal);
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
  const url = apiUrl(`/api/${endpoint}`, { run: selection.run, host: selection.host, tool: selection.tool });
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
  const response = await fetch("/api/capture", {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify(request),
  });
  if (!response.ok) throw await errorOf(response);
  return (await response.json()) as { id: string };
}

export function getCapture(id: string, signal?: AbortSignal): Promise<CaptureStatus> {
  return getJson<CaptureStatus>(`/api/capture/${encodeURIComponent(id)}`, signal);
}
