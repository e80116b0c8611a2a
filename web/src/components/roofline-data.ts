/**
 * The roofline chart's data from roofline_model's JSON, without the DOM: the op rows as
 * points (x operational intensity in FLOP/byte, y achieved GFLOP/s) and the roofline as two
 * segments, memory (y = x * GB/s, up to the ridge point) and compute (y = peak GFLOP/s,
 * from the ridge). A log-log chart cannot place 0 or null, so ops without both numbers
 * (no FLOPs, no bytes, a copy of 0 FLOPs) are not points; `left` counts them.
 */

import type { RooflineModel, RooflineRow } from "../generated/roofline_model";

export interface RooflinePoint {
  x: number;
  y: number;
  name: string;
}

export interface RooflineData {
  points: RooflinePoint[];
  memory: { x: number; y: number }[];
  compute: { x: number; y: number }[];
  left: number;
}

function positive(value: number | null): value is number {
  return value !== null && Number.isFinite(value) && value > 0;
}

export function rooflinePoints(rows: RooflineRow[]): RooflinePoint[] {
  return rows
    .filter((row) => positive(row.operational_intensity) && positive(row.gflops_per_second))
    .map((row) => ({ x: row.operational_intensity as number, y: row.gflops_per_second as number, name: row.name }));
}

export function rooflineData(result: RooflineModel): RooflineData {
  const points = rooflinePoints(result.ops);
  const tflops = result.peak_tflops;
  const gbps = result.peak_gbps;
  if (!positive(tflops) || !positive(gbps)) return { points, memory: [], compute: [], left: result.ops.length - points.length };
  const peak = tflops * 1e3; // GFLOP/s
  const ridge = peak / gbps; // FLOP/byte
  const xs = [...points.map((p) => p.x), ridge];
  const low = Math.min(...xs) / 4;
  const high = Math.max(...xs) * 4;
  return {
    points,
    memory: [
      { x: low, y: low * gbps },
      { x: ridge, y: peak },
    ],
    compute: [
      { x: ridge, y: peak },
      { x: high, y: peak },
    ],
    left: result.ops.length - points.length,
  };
}
