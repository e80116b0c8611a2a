/* Generated from schemas/graph_viewer.schema.json by web/scripts/generate-types.mjs: do not edit. */
/* A JSON form of stepscope.analysis (its registry and its tools); regenerate with `make schemas`. */

/**
 * What does an HLO op take from and feed into, and how long do its neighbours take?
 */
export interface GraphViewer {
  program: string;
  program_names: string[];
  op: string;
  op_names: string[];
  hops: number;
  computation: string;
  program_self_time_ps: number;
  nodes: GraphNode[];
  edges: GraphEdge[];
}
/**
 * One HLO instruction of the neighbourhood, with its op time where it ran.
 */
export interface GraphNode {
  bytes_accessed: number | null;
  called_computations: string[];
  category: string | null;
  distance: number;
  flops: number | null;
  fused_instructions: number | null;
  id: number;
  name: string;
  occurrences: number | null;
  op_name: string;
  opcode: string;
  operands: number;
  self_time_percent: number | null;
  shape: string;
  total_self_time_ps: number | null;
  total_self_time_us: number | null;
  total_time_ps: number | null;
  total_time_us: number | null;
  users: number;
}
/**
 * An operand -> user edge: ``source`` is an operand of ``target`` (instruction names).
 */
export interface GraphEdge {
  source: string;
  target: string;
}
