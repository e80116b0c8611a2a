/* Generated from schemas/overview_page.schema.json by web/scripts/generate-types.mjs: do not edit. */
/* A JSON form of stepscope.analysis (its registry and its tools); regenerate with `make schemas`. */

/**
 * How long is a step, where does its time go, and what should I do first?
 */
export interface OverviewPage {
  step_source: string;
  steps_inferred: boolean;
  steps: OverviewStep[];
  step_time_us: StepStats;
  step_time_us_all: StepStats;
  breakdown_percent: {
    [k: string]: number;
  };
  breakdown_percent_all: {
    [k: string]: number;
  };
  set_aside: SetAsideStep[];
  device: DeviceTotals;
  devices: DeviceBusy[];
  top_ops: TopOp[];
  environment: Environment;
  recommendation: Recommendation;
  flops: Flops;
  gpus: GpuMetrics[];
  throughput: Throughput;
}
export interface OverviewStep {
  breakdown: {
    [k: string]: number;
  };
  device_time_launched_us: number;
  set_aside: string | null;
  start_ps: number;
  start_us: number;
  step: number;
  step_time_ps: number;
  step_time_us: number;
}
/**
 * Step time in microseconds over a set of steps (0 for none).
 */
export interface StepStats {
  max: number;
  mean: number;
  median: number;
  min: number;
  stddev: number;
}
export interface SetAsideStep {
  baseline_us: number;
  compile_us: number;
  reason: string;
  step: number;
  step_time_us: number;
}
export interface DeviceTotals {
  active_span_us: number;
  busy_outside_steps_percent: number;
  busy_outside_steps_us: number;
  busy_percent: number;
  busy_percent_of_window: number;
  busy_time_us: number;
  idle_time_us: number;
  window_us: number;
}
export interface DeviceBusy {
  active_span_ps: number;
  active_span_us: number;
  busy_outside_steps_percent: number;
  busy_outside_steps_ps: number;
  busy_outside_steps_us: number;
  busy_percent: number;
  busy_percent_of_window: number;
  busy_time_ps: number;
  busy_time_us: number;
  device: string;
  idle_time_us: number;
  window_us: number;
}
export interface TopOp {
  cumulative_self_time_percent: number;
  full_name: string;
  gflops_per_second: number | null;
  name: string;
  self_time_percent: number;
  self_time_us: number;
  type: string;
}
export interface Environment {
  device_count: number;
  device_kind: string;
  device_type: string;
  devices: string[];
  framework: string;
  host: string;
  hosts: number;
  source_format: string;
  versions: {
    [k: string]: string | number;
  };
}
/**
 * The overview's verdict (documented in docs/tools/overview_page.md).
 */
export interface Recommendation {
  collectives_percent: number;
  evidence: Evidence[];
  host_percent: number;
  input_bound: string;
  input_percent: number;
  kernel_launch_percent: number;
  next_steps: string[];
  outside_steps: string;
  set_aside: string;
  summary: string;
  verdict: string;
}
export interface Evidence {
  finding: string;
  predicted: PredictedGain | null;
  query: string;
  sort_key: string | null;
  table: string | null;
  text: string;
  tool: string;
}
/**
 * What fixing a finding would buy: the matching critical_path what-if (finding_gains).
 */
export interface PredictedGain {
  change: string;
  description: string;
  gain_percent: number;
  predicted_step_ps: number;
  step_ps: number;
  text: string;
}
export interface Flops {
  device_flops: number | null;
  gflops_per_second: number | null;
  peak_tflops_per_second: number | null;
  utilization_percent: number | null;
}
export interface GpuMetrics {
  achieved_occupancy_percent: number | null;
  active_span_us: number;
  device: string;
  kernel_busy_time_us: number;
  kernel_count: number;
  kernel_time_us: number;
  occupancy_note: string | null;
  sm_count: number | null;
  sm_efficiency_note: string | null;
  sm_efficiency_percent: number | null;
  tensor_core_percent: number;
  tensor_core_time_us: number;
  top_kernels: KernelSlice[];
  utilization_percent: number;
}
/**
 * One slice of the top-kernels pie: a kernel name's total time on the device, or
 * (``other``) the kernels past the top ones together.
 */
export interface KernelSlice {
  kernel_name: string;
  other: boolean;
  percent: number;
  total_duration_ps: number;
  total_duration_us: number;
}
export interface Throughput {
  devices: string[];
  flop_assumptions: Assumption[];
  flops_source: string;
  mfu_percent: number | null;
  peak_tflops_per_second: number | null;
  samples_per_second: number | null;
  steps: StepThroughput[];
  tokens_per_second: number | null;
}
/**
 * What shape estimates took for an argument the profile did not record, and for how many.
 */
export interface Assumption {
  assumption: string;
  ops: number;
}
export interface StepThroughput {
  flops: number | null;
  mfu_percent: number | null;
  samples: number | null;
  samples_per_second: number | null;
  step: number;
  step_time_ps: number;
  tokens: number | null;
  tokens_per_second: number | null;
}
