/* Generated from schemas/critical_path.schema.json by web/scripts/generate-types.mjs: do not edit. */
/* A JSON form of stepscope.analysis (its registry and its tools); regenerate with `make schemas`. */

/**
 * What chain of work and waits sets each step's length, and what would a change buy?
 */
export interface CriticalPath {
  steps: StepPath[];
  what_if: WhatIf[];
  mean_step_ps: number;
  anchor: string;
  kinds: string[];
}
export interface StepPath {
  by_kind_ps: {
    [k: string]: number;
  };
  duration_ps: number;
  segments: Segments;
  start_ps: number;
  step: number;
  top: PathOp[];
}
/**
 * The path's pieces, as columns (entry i of each is piece i's; latest first): piece i
 * is ``[start_ps[i], end_ps[i])`` of kind ``kind[i]`` on line ``line[i]`` of plane
 * ``plane[i]``, in op, kernel or gap ``name[i]``. Columns, not one object a piece: a step's
 * path has tens of thousands of pieces (46,000 on the DDP trace's three steps), and making and
 * writing an object for each cost as much as the rest of the tool.
 */
export interface Segments {
  end_ps: number[];
  kind: string[];
  line: number[];
  name: string[];
  plane: number[];
  start_ps: number[];
}
/**
 * An op or kernel on a step's path, and its time there.
 */
export interface PathOp {
  kind: string;
  name: string;
  ps: number;
}
export interface WhatIf {
  change: string;
  description: string;
  predicted_step_ps: number;
  predicted_steps_ps: number[];
}
