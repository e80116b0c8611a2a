/* Generated from schemas/hlo_stats.schema.json by web/scripts/generate-types.mjs: do not edit. */
/* A JSON form of stepscope.analysis (its registry and its tools); regenerate with `make schemas`. */

/**
 * Which HLO ops take the time, at what FLOP rate and bandwidth, and are they compute- or memory-bound?
 */
export interface HloStats {
  device: string;
  devices: string[];
  peaks: Peaks[];
  ridge_point: number | null;
  total_self_time_ps: number;
  total_self_time_us: number;
  rows: HloOpRow[];
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
 * One HLO op of one program, summed over the selected device(s).
 */
export interface HloOpRow {
  avg_self_time_us: number;
  avg_time_us: number;
  bound_by: string | null;
  bytes_accessed: number | null;
  category: string;
  cumulative_self_time_percent: number;
  expression: string;
  flops: number | null;
  gflops_per_second: number | null;
  memory_bandwidth_gb_per_second: number | null;
  name: string;
  occurrences: number;
  operational_intensity: number | null;
  program: string;
  program_id: string;
  rank: number;
  self_time_percent: number;
  total_self_time_ps: number;
  total_self_time_us: number;
  total_time_ps: number;
  total_time_us: number;
}
