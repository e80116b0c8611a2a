/**
 * The memory chart's selected time range (drag on the chart to zoom into it, "Reset zoom"
 * to go back): pure rules for what the tables show for a range.
 */

import type { ApiTable, MemoryDevice } from "../api";

/** A time range in ms from the profile start, both ends included (the chart's x axis). */
export interface RangeMs {
  start_ms: number;
  end_ms: number;
}

/** Whether the device's peak (its first occurrence) lies in the range; any peak when no range. */
export function peakInRange(device: Pick<MemoryDevice, "peak_time_us">, range: RangeMs | null): boolean {
  if (!range) return true;
  const at = device.peak_time_us / 1000;
  return range.start_ms <= at && at <= range.end_ms;
}

/**
 * The highest allocated level during the range, from the timeline (each point is the level
 * just after an event, held until the next): the level the range starts with counts. Its
 * time is the point's, or the range start for the level carried in. Null before any point.
 */
export function rangePeak(device: Pick<MemoryDevice, "timeline">, range: RangeMs): { bytes: number; time_ms: number } | null {
  let best: { bytes: number; time_ms: number } | null = null;
  for (const point of device.timeline) {
    const at = point.time_us / 1000;
    if (at > range.end_ms) break;
    if (at < range.start_ms) {
      best = { bytes: point.allocated_bytes, time_ms: range.start_ms };
    } else if (!best || point.allocated_bytes > best.bytes) {
      best = { bytes: point.allocated_bytes, time_ms: at };
    }
  }
  return best;
}

/** The table's rows of one device (the tool lists every device's; the page shows one). */
export function deviceRows(table: ApiTable, device: Pick<MemoryDevice, "device">): ApiTable {
  const column = table.columns.findIndex((candidate) => candidate.key === "device");
  return { ...table, rows: table.rows.filter((row) => row[column] === device.device) };
}

/**
 * The peak holders table for the shown device: its rows without a range; with one, its rows
 * when its peak lies in the range, else none (the holders are those at the peak).
 */
export function holdersForRange(table: ApiTable, device: Pick<MemoryDevice, "device" | "peak_time_us">, range: RangeMs | null): ApiTable {
  const rows = deviceRows(table, device);
  return peakInRange(device, range) ? rows : { ...rows, rows: [] };
}

/**
 * The allocations table for the shown device, in the tool's order (largest first, then the
 * earliest): all of them without a range; with one, those alive at some time in it (start
 * <= range end, and freed at or after the range start or live at the end).
 */
export function allocationsForRange(table: ApiTable, device: Pick<MemoryDevice, "device">, range: RangeMs | null): ApiTable {
  const rows = deviceRows(table, device);
  if (!range) return rows;
  const index = (key: string): number => table.columns.findIndex((column) => column.key === key);
  const [startAt, endAt] = [index("start_us"), index("end_us")];
  return {
    ...rows,
    rows: rows.rows.filter((row) => {
      const start = Number(row[startAt]) / 1000;
      const end = row[endAt] === null || row[endAt] === undefined ? Infinity : Number(row[endAt]) / 1000;
      return start <= range.end_ms && end >= range.start_ms;
    }),
  };
}
