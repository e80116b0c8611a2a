/* Generated from schemas/memory_viewer.schema.json by web/scripts/generate-types.mjs: do not edit. */
/* A JSON form of stepscope.analysis (its registry and its tools); regenerate with `make schemas`. */

/**
 * How much memory does each compiled XLA program need at its peak, and which buffers make up the peak?
 */
export interface MemoryViewer {
  program: string;
  memory_space: number;
  program_names: string[];
  peak_bytes: number;
  peak_mib: number;
  peak_step: number | null;
  peak_instruction: string;
  indefinite_bytes: number;
  untraced_bytes: number;
  live_buffers_at_peak: number;
  programs: ProgramRow[];
  points: PointRow[];
  buffers: BufferRow[];
}
export interface ProgramRow {
  heap_events: number;
  indefinite_bytes: number;
  indefinite_mib: number;
  name: string;
  peak_bytes: number;
  peak_instruction: string;
  peak_mib: number;
  peak_step: number | null;
  program: string;
  program_id: string;
  temporary_peak_mib: number;
  untraced_bytes: number;
}
export interface PointRow {
  buffer_id: number;
  bytes: number;
  computation: string;
  instruction: string;
  kind: string;
  mib: number;
  sequence_index: number | null;
  step: number;
}
export interface BufferRow {
  allocation: number;
  buffer_id: number;
  category: string;
  dtype: string;
  instruction: string;
  op_name: string;
  opcode: string;
  rank: number;
  shape: string;
  size_bytes: number;
  size_mib: number;
  source: string;
  unpadded_bytes: number | null;
  unpadded_mib: number | null;
}
