/* Generated from schemas/flame_graph.schema.json by web/scripts/generate-types.mjs: do not edit. */
/* A JSON form of stepscope.analysis (its registry and its tools); regenerate with `make schemas`. */

/**
 * Which call stacks does a thread spend a step's time in (self and total time per frame)?
 */
export interface FlameGraph {
  thread: string;
  threads: string[];
  step: string;
  steps: string[];
  start_ps: number;
  end_ps: number;
  busy_ps: number;
  busy_us: number;
  cut_ps: number;
  root: FlameNode;
}
/**
 * A call path (a frame under its parent's path), a thread, or the root; its fields
 * are its JSON form.
 */
export interface FlameNode {
  name: string;
  category: string;
  self_ps: number;
  total_ps: number;
  self_us: number;
  total_us: number;
  children: FlameNode[];
}
