/* Generated from schemas/memory_profile.schema.json by web/scripts/generate-types.mjs: do not edit. */
/* A JSON form of stepscope.analysis (its registry and its tools); regenerate with `make schemas`. */

/**
 * How does allocated memory evolve, where is the peak, and which ops hold memory there?
 */
export interface MemoryProfile {
  devices: MemoryDevice[];
  note: string;
}
/**
 * One device or allocator.
 */
export interface MemoryDevice {
  allocated_from: string;
  allocations: Allocation[];
  device: string;
  events: number;
  frees_matched_by: string;
  lifetime_peak_bytes: number | null;
  peak_allocated_bytes: number;
  peak_holders: PeakHolder[];
  peak_in_use_bytes: number | null;
  peak_reserved_bytes: number | null;
  peak_step: number | null;
  peak_time_ps: number;
  peak_time_us: number;
  reserved_from: string | null;
  step_peaks: StepPeak[];
  timeline: MemoryPoint[];
}
/**
 * One allocation made during the profile (see ``allocations``).
 */
export interface Allocation {
  bytes: number;
  end_us: number | null;
  lifetime_us: number | null;
  op: string;
  start_us: number;
}
export interface PeakHolder {
  allocations: number;
  bytes: number;
  op: string;
}
export interface StepPeak {
  peak_allocated_bytes: number;
  step: number;
}
export interface MemoryPoint {
  allocated_bytes: number;
  reserved_bytes: number | null;
  time_us: number;
}
