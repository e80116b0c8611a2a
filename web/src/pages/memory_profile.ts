/**
 * memory_profile: per device (or allocator), memory over time with its peak, and the ops
 * holding memory at the peak. One device is shown at a time (#memory-device), as XProf's
 * memory profile does: the one the address names (`memory_device`), else the largest peak;
 * the chart marks the peak. Dragging across the chart zooms into a time range, which the
 * peak holders and allocations tables follow (memory_range.ts); "Reset zoom" goes back to
 * the whole profile. Those two tables list the shown device's rows only (the tool's tables
 * hold every device's), the allocations largest first as the tool orders them.
 * The peaks table covers every device.
 */

import type { MemoryDevice, MemoryProfile } from "../api";
import { memoryTimelineData } from "../components/chart-data";
import { memoryLineChart, resetChartZoom } from "../components/charts";
import { at, card, metric, metrics, note } from "../components/metric";
import { findTable, renderTable } from "../components/table";
import { el } from "../dom";
import { formatBytes } from "../format";
import { add, grid, tableCard } from "./common";
import { memoryDeviceAddress, pickMemoryDevice, reservedLabel, wantedMemoryDevice } from "./memory_device";
import { allocationsForRange, holdersForRange, peakInRange, rangePeak, type RangeMs } from "./memory_range";
import type { PageContext, ToolPage } from "./types";

const CHART = "memory_timeline";

function summaryCard(device: MemoryDevice): HTMLElement {
  return card(
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
  );
}

/** The line under the chart saying which range the tables cover. */
function rangeText(device: MemoryDevice, range: RangeMs | null): string {
  if (!range) return "Whole profile. Drag across the chart to zoom into a time range; the peak holders and allocations tables follow it.";
  const span = `${range.start_ms.toFixed(3)} – ${range.end_ms.toFixed(3)} ms`;
  const highest = rangePeak(device, range);
  const level = highest ? `; highest level ${formatBytes(highest.bytes)} at ${highest.time_ms.toFixed(3)} ms` : "";
  const peak = peakInRange(device, range) ? "holds the peak" : `does not hold the peak (at ${(device.peak_time_us / 1000).toFixed(3)} ms), so no peak holders`;
  return `Range ${span}${level}; it ${peak}.`;
}

function render(root: HTMLElement, context: PageContext): void {
  const data = context.data as MemoryProfile;
  const layout = grid(root);
  if (data.devices.length === 0) {
    add(layout, card("Memory profile", note(data.note, "note", { id: "memory-note" }), { id: "memory-empty" }, true));
    return;
  }
  const slot = el("div", { class: "grid-contents" });
  const holdersSlot = el("div", { class: "grid-contents" });
  const holders = findTable(context.tables, "peak_holders");
  const allocations = findTable(context.tables, "allocations");
  let device = pickMemoryDevice(data.devices, wantedMemoryDevice(location.search))!;
  let range: RangeMs | null = null;
  const rangeLine = el("p", { class: "note", id: "memory-range" });

  const showRange = (next: RangeMs | null): void => {
    range = next;
    rangeLine.textContent = rangeText(device, range);
    if (next) rangeLine.setAttribute("data-start-ms", String(next.start_ms));
    else rangeLine.removeAttribute("data-start-ms");
    if (next) rangeLine.setAttribute("data-end-ms", String(next.end_ms));
    else rangeLine.removeAttribute("data-end-ms");
    holdersSlot.replaceChildren(
      ...(holders
        ? [card(null, renderTable(holdersForRange(holders, device, range), { title: "Memory held at the peak, by op", selection: context.selection }), { "data-card": "peak_holders" }, true)]
        : []),
      ...(allocations
        ? [
            card(
              null,
              [
                renderTable(allocationsForRange(allocations, device, range), { title: "Largest allocations", selection: context.selection }),
                note(
                  `The largest allocations made on ${device.device} during the profile, largest first (on a tie, the earliest first; the tool keeps 100 per device), with their lifetimes and the op that made them.`,
                  "note",
                ),
              ],
              { "data-card": "allocations" },
              true,
            ),
          ]
        : []),
    );
  };
  const reset = el("button", { type: "button", id: "memory-reset-zoom", title: "Show the whole profile" }, "Reset zoom");
  reset.addEventListener("click", () => {
    resetChartZoom(CHART);
    showRange(null);
  });
  const show = (next: MemoryDevice): void => {
    device = next;
    const chart = memoryLineChart(CHART, `Memory of ${device.device} over time`, memoryTimelineData(device), showRange);
    slot.replaceChildren(summaryCard(device), card("Memory timeline", [chart, el("div", { class: "inline-control" }, [reset]), rangeLine], { id: "memory-timeline" }, true));
    showRange(null);
  };
  if (data.devices.length > 1) {
    const select = el(
      "select",
      { id: "memory-device", "aria-label": "Memory device" },
      data.devices.map((candidate) => el("option", { value: candidate.device }, candidate.device)),
    );
    select.value = device.device;
    select.addEventListener("change", () => {
      show(pickMemoryDevice(data.devices, select.value)!);
      const next = memoryDeviceAddress(location.pathname, location.search, context.selection, device.device);
      if (next !== null && next !== `${location.pathname}${location.search}`) history.replaceState(history.state, "", next);
    });
    add(layout, el("div", { class: "inline-control wide" }, [el("label", { for: "memory-device" }, "Device / allocator "), select]));
  }
  add(layout, slot);
  show(device);
  add(
    layout,
    tableCard(context, "memory_peaks", "Peaks per device"),
    holdersSlot,
    card("How these figures were made", note(data.note, "note", { id: "memory-note" }), { id: "memory-notes" }, true),
  );
}

export const memoryProfilePage: ToolPage = { tables: true, render };
