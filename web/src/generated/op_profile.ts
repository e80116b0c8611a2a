/* Generated from schemas/op_profile.schema.json by web/scripts/generate-types.mjs: do not edit. */
/* A JSON form of stepscope.analysis (its registry and its tools); regenerate with `make schemas`. */

/**
 * Where does the device's time go by program, category and op, and how well does each use the device's FLOPS?
 */
export interface OpProfile {
  device: string;
  devices: string[];
  side: string;
  top_n: number;
  exclude_idle: boolean;
  idle_time_ps: number;
  idle_time_us: number;
  peak_teraflops_per_second: number | null;
  root: OpProfileNode;
}
/**
 * A node of the tree (root, program, category, op, or a "(K more)" fold); its fields
 * are its JSON form.
 */
export interface OpProfileNode {
  name: string;
  kind: string;
  time_ps: number;
  time_us: number;
  occurrences: number;
  flops: number | null;
  bytes_accessed: number | null;
  time_percent: number;
  time_percent_with_idle: number;
  gflops_per_second: number | null;
  flops_utilization: number | null;
  memory_bandwidth_gb_per_second: number | null;
  color_hint: number | null;
  expression: string | null;
  shape: string | null;
  folded: number;
  children: OpProfileNode[];
}
