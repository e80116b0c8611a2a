/* Generated from schemas/distributed.schema.json by web/scripts/generate-types.mjs: do not edit. */
/* A JSON form of stepscope.analysis (its registry and its tools); regenerate with `make schemas`. */

/**
 * stepscope distributed --format json: a run of many ranks as one (rank x step, stragglers, collectives).
 */
export interface Distributed {
  run: string;
  unit: string;
  world_size: number;
  rank_source: string;
  alignment: string;
  rule: StragglerRule;
  ranks: DistributedRank[];
  steps: DistributedStep[];
  stragglers: DistributedStraggler[];
  collectives: DistributedCollective[];
  warnings: string[];
  job_steps: JobStepPath[];
  straggle_removed: StraggleRemovedRow[];
  job_paths_note: string;
}
export interface StragglerRule {
  k_sigma: number;
  min_excess_fraction: number;
  min_ranks: number;
}
export interface DistributedRank {
  clock: string;
  collective_wait_ps: number;
  device: string;
  file_host: string;
  format: string;
  host: string;
  host_rank: number;
  rank: number;
  source: string;
  start_offset_ps: number;
  step_time_mean_ps: number;
  steps: number;
  warnings: string[];
}
export interface DistributedStep {
  breakdown: {
    [k: string]: number;
  };
  collective_ps: number;
  collective_wait_ps: number;
  compute_ps: number;
  exposed_collective_ps: number;
  memcpy_ps: number;
  overlap_ps: number;
  rank: number;
  set_aside: boolean;
  start_offset_ps: number;
  step: number;
  step_time_ps: number;
  trace_start_ps: number;
}
export interface DistributedStraggler {
  excess_percent: number;
  excess_ps: number;
  median_ps: number;
  rank: number;
  signal: string;
  stage: string;
  stage_excess_ps: number;
  step: number;
  threshold_ps: number;
  value_ps: number;
}
export interface DistributedCollective {
  bytes: number | null;
  calls: number;
  calls_per_rank_max: number;
  matched: number;
  name: string;
  time_per_rank_ps: number;
  wait_max_ps: number;
  wait_max_rank: number;
  wait_mean_ps: number;
  wait_min_ps: number;
  wait_min_rank: number;
  wait_skew_ps: number;
}
/**
 * Step ``step`` of the job (the ranks' steps matched by position): the slowest rank's
 * step and the path that set it, which may run through other ranks' work (a collective
 * ends when its last rank joins it).
 */
export interface JobStepPath {
  by_kind_ps: {
    [k: string]: number;
  };
  by_rank_ps: {
    [k: string]: number;
  };
  kind: string;
  setting_rank: number;
  slowest_rank: number;
  step: number;
  step_ps: number;
}
/**
 * What if rank ``rank``'s straggle were removed: the other ranks stop waiting for it.
 */
export interface StraggleRemovedRow {
  predicted_step_ps: number;
  predicted_steps_ps: number[];
  rank: number;
}
