/**
 * memory_profile: per device (or allocator), memory over time with its peak, and the ops
 * holding memory at the peak. One device is shown at a time (#memory-device), as XProf's
 * memory profile does: the one the address names (`memory_device`), else the largest peak;
 * the chart marks the peak. The tables cover every device.
 */

import type { MemoryDevice, MemoryProfile } from "../api";
import { memoryTimelineData } from "../components/chart-data";
import { memoryLineChart } from "../components/charts";
import { at, card, metric, metrics, note } from "../components/metric";
import { el } from "../dom";
import { add, grid, tableCard } from "./common";
import { memoryDeviceAddress, pickMemoryDevice, reservedLabel, wantedMemoryDevice } from "./memory_device";
import type { PageContext, ToolPage } from "./types";

function deviceView(device: MemoryDevice): HTMLElement[] {
  return [
    card(
      `Memory: ${device.device}`,
      metrics([
        metric("peak_allocated_bytes", at(device, "peak_allocated_bytes"), "Peak allocated"),
        metric("peak_time_us", at(device, "peak_time_us"), "Peak at"),
        metric("peak_step", at(device, "peak_step"), "Peak step"),
        // A source without a reserved figure says so, rather than a dash that reads as 0.
        metric("peak_reserved_bytes", device.peak_reserved_bytes === null ? "not recorded" : at(device, "peak_reserved_bytes"), reservedLabel(device)),
        ...(device.peak_in_use_bytes === null ? [] : [metric("peak_in_use_bytes", at(device, "peak_in_use_bytes"), "Peak allocated + reserved")]),
        metric("lifetime_peak_bytes", at(device, "lifetime_peak_bytes"), "Allocator's lifetime peak"),
        metric("events", at(device, "events"), "Memory events"),
        metric("allocated_from", device.allocated_from, "Allocated figure from"),
        metric("frees_matched_by", device.frees_matched_by, "Frees matched by"),
      ]),
      { id: "memory-summary", "data-device": device.device },
      true,
    ),
    card("Memory timeline", memoryLineChart("memory_timeline", `Memory of ${device.device} over time`, memoryTimelineData(device)), { id: "memory-timeline" }, true),
  ];
}

function render(root: HTMLElement, context: PageContext): void {
  const data = context.data as MemoryProfile;
  const layout = grid(root);
  if (data.devices.length === 0) {
    add(layout, card("Memory profile", note(data.note, "note", { id: "memory-note" }), { id: "memory-empty" }, true));
    return;
  }
  const slot = el("div", { class: "grid-contents" });
  const show = (device: MemoryDevice): void => {
    slot.replaceChildren(...deviceView(device));
  };
  // The device the address names, else the largest peak (memory_device.ts).
  const first = pickMemoryDevice(data.devices, wantedMemoryDevice(location.search))!;
  if (data.devices.length > 1) {
    const select = el(
      "select",
      { id: "memory-device", "aria-label": "Memory device" },
      data.devices.map((device) => el("option", { value: device.device }, device.device)),
    );
    select.value = first.device;
    select.addEventListener("change", () => {
      const device = pickMemoryDevice(data.devices, select.value)!;
      show(device);
      const next = memoryDeviceAddress(location.pathname, location.search, context.selection, device.device);
      if (next !== null && next !== `${location.pathname}${location.search}`) history.replaceState(history.state, "", next);
    });
    add(layout, el("div", { class: "inline-control wide" }, [el("label", { for: "memory-device" }, "Device / allocator "), select]));
  }
  add(layout, slot);
  show(first);
  add(
    layout,
    tableCard(context, "memory_peaks", "Peaks per device"),
    tableCard(context, "peak_holders", "Memory held at the peak, by op"),
    card("How these figures were made", note(data.note, "note", { id: "memory-note" }), { id: "memory-notes" }, true),
  );
}

export const memoryProfilePage: ToolPage = { tables: true, render };
