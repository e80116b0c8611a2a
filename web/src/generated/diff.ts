/* Generated from schemas/diff.schema.json by web/scripts/generate-types.mjs: do not edit. */
/* A JSON form of stepscope.analysis (its registry and its tools); regenerate with `make schemas`. */

/**
 * GET /api/diff and stepscope diff --format json: what changed between two runs.
 */
export interface Diff {
  base: string;
  new: string;
  warnings: string[];
  verdict: string;
  step_time: StepTime;
  breakdown: CategoryChange[];
  aligned_by: string;
  steps: StepPair[];
  ops: OpChange[];
  op_categories: OpCategoryChange[];
  kernels: KernelChange[];
  memory: MemoryDeviceChange[];
  memory_peak: MemoryPeak;
}
/**
 * Step time in microseconds over each run's steady-state steps.
 */
export interface StepTime {
  mean: Change;
  median: Point;
  p90: Point;
  set_aside_base: number;
  set_aside_new: number;
  steps_base: number;
  steps_new: number;
}
/**
 * A mean over steps and its change, with the bootstrap interval (null: too few steps).
 */
export interface Change {
  base: number;
  change: number;
  change_percent: number | null;
  ci_high: number | null;
  ci_high_percent: number | null;
  ci_low: number | null;
  ci_low_percent: number | null;
  new: number;
  significant: boolean | null;
}
/**
 * One figure of both runs and its change (``change_percent``: null when base is 0).
 */
export interface Point {
  base: number;
  change: number;
  change_percent: number | null;
  new: number;
}
/**
 * One breakdown category: mean us per steady-state step, and its share of the step.
 */
export interface CategoryChange {
  base: number;
  base_percent: number;
  category: string;
  change: number;
  change_percent: number | null;
  ci_high: number | null;
  ci_high_percent: number | null;
  ci_low: number | null;
  ci_low_percent: number | null;
  new: number;
  new_percent: number;
  significant: boolean | null;
}
/**
 * A step of each run, side by side (null where one run has no partner).
 */
export interface StepPair {
  base_set_aside: string | null;
  base_start_ps: number | null;
  base_step: number | null;
  base_step_ps: number | null;
  base_us: number | null;
  change_percent: number | null;
  change_us: number | null;
  new_set_aside: string | null;
  new_start_ps: number | null;
  new_step: number | null;
  new_step_ps: number | null;
  new_us: number | null;
}
export interface OpChange {
  base_occurrences: number;
  base_per_step_us: number | null;
  base_self_us: number;
  base_total_us: number;
  change_per_step_percent: number | null;
  change_per_step_us: number | null;
  change_percent: number | null;
  change_ps: number;
  change_self_us: number;
  change_us: number;
  host_or_device: string;
  name: string;
  new_occurrences: number;
  new_per_step_us: number | null;
  new_self_us: number;
  new_total_us: number;
  status: string;
  type: string;
}
export interface OpCategoryChange {
  base_occurrences: number;
  base_per_step_us: number | null;
  base_total_us: number;
  change_per_step_percent: number | null;
  change_per_step_us: number | null;
  change_percent: number | null;
  change_ps: number;
  change_us: number;
  host_or_device: string;
  new_occurrences: number;
  new_per_step_us: number | null;
  new_total_us: number;
  status: string;
  type: string;
}
export interface KernelChange {
  base_occurrences: number;
  base_per_step_us: number | null;
  base_total_us: number;
  change_per_step_percent: number | null;
  change_per_step_us: number | null;
  change_percent: number | null;
  change_ps: number;
  change_us: number;
  name: string;
  new_occurrences: number;
  new_per_step_us: number | null;
  new_total_us: number;
  status: string;
}
export interface MemoryDeviceChange {
  base_peak_bytes: number | null;
  change_bytes: number;
  change_percent: number | null;
  device: string;
  new_peak_bytes: number | null;
  status: string;
}
/**
 * The largest device peak of each run (null: the run recorded no memory events).
 */
export interface MemoryPeak {
  base_bytes: number | null;
  base_device: string | null;
  change_bytes: number | null;
  change_percent: number | null;
  new_bytes: number | null;
  new_device: string | null;
}
