/* Generated from schemas/input_pipeline_analyzer.schema.json by web/scripts/generate-types.mjs: do not edit. */
/* A JSON form of stepscope.analysis (its registry and its tools); regenerate with `make schemas`. */

/**
 * Is the job waiting for data, in which steps, and which input work (read, decode, transform) costs most?
 */
export interface InputPipelineAnalyzer {
  step_source: string;
  steps_inferred: boolean;
  steps: InputStep[];
  input_percent: InputShare;
  verdict: string;
  host_breakdown_us: {
    [k: string]: number;
  };
  input_ops: InputOp[];
  note: string;
}
export interface InputStep {
  input_percent: number;
  input_ps: number;
  input_us: number;
  set_aside: string | null;
  step: number;
  step_time_ps: number;
  step_time_us: number;
}
/**
 * The input share of step time (percent), over the steps not set aside.
 */
export interface InputShare {
  max: number;
  mean: number;
  min: number;
  stddev: number;
}
export interface InputOp {
  category: string;
  count: number;
  name: string;
  self_ms: number;
  self_percent: number;
  self_ps: number;
  total_ms: number;
  total_percent: number;
  total_ps: number;
}
