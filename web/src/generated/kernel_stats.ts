/* Generated from schemas/kernel_stats.schema.json by web/scripts/generate-types.mjs: do not edit. */
/* A JSON form of stepscope.analysis (its registry and its tools); regenerate with `make schemas`. */

/**
 * Which GPU kernels run, how often, how long, with what launch shape and occupancy?
 */
export interface KernelStats {
  rows: KernelRow[];
  total_kernel_time_us: number;
  total_kernel_time_ps: number;
  devices: string[];
  tensor_core_time_us: number;
  tensor_core_percent: number;
}
/**
 * One kernel, launch configuration and framework op: the ``kernels`` table's row.
 */
export interface KernelRow {
  avg_duration_us: number;
  block_dim: string;
  grid_dim: string;
  is_kernel_using_tensor_core: boolean;
  is_op_tensor_core_eligible: boolean;
  kernel_name: string;
  max_duration_us: number;
  min_duration_us: number;
  occupancy_pct: number | null;
  occurrences: number;
  op_name: string;
  registers_per_thread: number;
  shared_memory_bytes: number;
  total_duration_ps: number;
  total_duration_us: number;
}
