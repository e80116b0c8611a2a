/**
 * The memory page's pure choices: which device it opens on, and the address that keeps the
 * choice (`&memory_device=NAME`, beside run/host/tool; the shell keeps such parameters while
 * the address names this run and tool, see state/url.ts).
 */

import type { MemoryDevice, Selection } from "../api";

export const MEMORY_DEVICE_PARAM = "memory_device";

/**
 * The device the address names if the profile has it; else the one with the largest peak
 * allocated figure (the first of those on a tie), so a page does not open on a CPU
 * allocator's 8 B while a GPU holds gigabytes. Null with no devices.
 */
export function pickMemoryDevice(devices: MemoryDevice[], wanted?: string | null): MemoryDevice | null {
  const named = devices.find((device) => device.device === wanted);
  if (named) return named;
  let best: MemoryDevice | null = null;
  for (const device of devices) if (!best || device.peak_allocated_bytes > best.peak_allocated_bytes) best = device;
  return best;
}

/** The device the address asks for (`memory_device`), or null. */
export function wantedMemoryDevice(search: string): string | null {
  return new URLSearchParams(search).get(MEMORY_DEVICE_PARAM);
}

/**
 * The address (path and query) naming `device`; null when the address no longer belongs to
 * `selection` (the shell moved to another run or tool meanwhile).
 */
export function memoryDeviceAddress(pathname: string, search: string, selection: Pick<Selection, "run" | "tool">, device: string): string | null {
  const params = new URLSearchParams(search);
  if (params.get("tool") !== selection.tool || params.get("run") !== selection.run) return null;
  params.set(MEMORY_DEVICE_PARAM, device);
  return `${pathname}?${params.toString()}`;
}

/** What the "Peak reserved" figure means for this source, as the page labels it. */
export function reservedLabel(device: Pick<MemoryDevice, "reserved_from">): string {
  return device.reserved_from === "bytes_reserved" ? "Peak reserved (beside allocated)" : "Peak reserved";
}
