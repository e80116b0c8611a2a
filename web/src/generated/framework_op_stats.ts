/* Generated from schemas/framework_op_stats.schema.json by web/scripts/generate-types.mjs: do not edit. */
/* A JSON form of stepscope.analysis (its registry and its tools); regenerate with `make schemas`. */

/**
 * Which framework ops (aten::, TF ops, XLA ops) take the time, on host and device?
 */
export interface FrameworkOpStats {
  rows: OpRow[];
  idle_rows: OpTableRow[];
}
/**
 * One framework op (type, name) of one side: framework_op_stats' row.
 */
export interface OpRow {
  avg_self_time_us: number;
  avg_time_us: number;
  bound_by: string | null;
  cumulative_self_time_percent: number;
  gflops_per_second: number | null;
  host_or_device: string;
  memory_bandwidth_gb_per_second: number | null;
  name: string;
  occurrences: number;
  operational_intensity: number | null;
  rank: number;
  self_time_percent: number;
  self_time_percent_with_idle: number;
  total_self_time_ps: number;
  total_self_time_us: number;
  total_time_ps: number;
  total_time_us: number;
  type: string;
}
/**
 * What every row of the framework op table has, a side's IDLE row included.
 */
export interface OpTableRow {
  host_or_device: string;
  name: string;
  occurrences: number;
  rank: number;
  self_time_percent_with_idle: number;
  total_self_time_ps: number;
  total_self_time_us: number;
  total_time_ps: number;
  total_time_us: number;
  type: string;
}
