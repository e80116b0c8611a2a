/**
 * Only what applies: a CPU-only profile has no device busy time, no devices table and a
 * step breakdown whose device columns are zero in every step. These pure rules say what a
 * page leaves out, and the page says in one line what it left out and why, so an empty
 * panel never looks like a broken one.
 */

import type { ApiTable, FrameworkOpRow } from "../api";

/** Column keys of `table` (among `candidates`, all when omitted) that are 0 in every row. */
export function zeroColumns(table: ApiTable, candidates?: string[]): string[] {
  if (table.rows.length === 0) return [];
  return table.columns
    .map((column, index) => ({ key: column.key, index, kind: column.kind }))
    .filter(({ key, kind }) => kind === "number" && (candidates === undefined || candidates.includes(key)))
    .filter(({ index }) => table.rows.every((row) => row[index] === 0))
    .map(({ key }) => key);
}

export const SIDES = ["Host", "Device"] as const;
export type Side = (typeof SIDES)[number];

/** The sides (host, device) that have at least one op row: a pie for a side with none is left out. */
export function sidesWithOps(rows: Pick<FrameworkOpRow, "host_or_device">[]): Side[] {
  return SIDES.filter((side) => rows.some((row) => row.host_or_device === side));
}

/** What framework_op_stats leaves out, in one line ("" when both sides have ops). */
export function missingSidesNote(rows: Pick<FrameworkOpRow, "host_or_device">[]): string {
  const present = sidesWithOps(rows);
  if (present.length === 0) return "No framework ops in this profile: it holds no PyTorch, TensorFlow or XLA op events, so there is nothing to tabulate.";
  if (present.length === SIDES.length) return "";
  return present[0] === "Host"
    ? "No device-side ops in this profile (no accelerator work was recorded): host-side ops only."
    : "No host-side ops in this profile: device-side ops only.";
}

/** Whether any node of the op profile tree records FLOPs (else FLOPS utilisation is unknown everywhere). */
export interface FlopsNode {
  flops: number | null;
  children: FlopsNode[];
}

export function hasFlops(node: FlopsNode): boolean {
  return node.flops !== null || node.children.some((child) => hasFlops(child));
}

/**
 * Whether the input pipeline analyzer found input events (DataLoader fetches, tf.data
 * iterators, stepscope.data annotations): without them every input figure is 0, and the
 * page shows the tool's one line instead of zero charts and empty tables.
 */
export function hasInputEvents(data: { input_ops: unknown[] }): boolean {
  return data.input_ops.length > 0;
}
