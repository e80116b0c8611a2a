/* Generated from schemas/roofline_model.schema.json by web/scripts/generate-types.mjs: do not edit. */
/* A JSON form of stepscope.analysis (its registry and its tools); regenerate with `make schemas`. */

/**
 * How close do the device, each program and each HLO op come to the device's roofline, and what bounds them?
 */
export interface RooflineModel {
  device: string;
  devices: string[];
  source: string;
  unestimated_ops: number;
  unestimated_time_ps: number;
  unestimated: Unestimated[];
  assumed_ops: number;
  assumptions: Assumption[];
  peaks: Peaks[];
  peak_tflops: number | null;
  peak_gbps: number | null;
  ridge_point: number | null;
  device_rows: RooflineRow[];
  programs: RooflineRow[];
  ops: RooflineRow[];
}
/**
 * An op with no FLOP count: no XLA cost analysis, or no estimator for its shapes.
 */
export interface Unestimated {
  name: string;
  occurrences: number;
  time_ps: number;
}
/**
 * What shape estimates took for an argument the profile did not record, and for how many.
 */
export interface Assumption {
  assumption: string;
  ops: number;
}
/**
 * One device's peaks and where they came from (its JSON form).
 */
export interface Peaks {
  device: string;
  chip: string | null;
  peak_tflops: number | null;
  peak_gbps: number | null;
  source: string;
}
/**
 * A device, a program or an HLO op against the roofline.
 */
export interface RooflineRow {
  attainable_gflops_per_second: number | null;
  bandwidth_utilization: number | null;
  bound_by: string | null;
  bytes_accessed: number | null;
  category: string;
  compute_utilization: number | null;
  device: string;
  flops: number | null;
  gflops_per_second: number | null;
  level: string;
  memory_bandwidth_gb_per_second: number | null;
  name: string;
  occurrences: number;
  operational_intensity: number | null;
  program: string;
  roofline_fraction: number | null;
  time_ps: number;
  time_us: number;
}
