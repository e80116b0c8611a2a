/**
 * memory_viewer: one compiled XLA program at a time (the `program` option, offered from
 * the result's `program_names`; default the largest peak): its peak and what makes it up,
 * memory in use over its heap events with the peak marked (program order, not time: XLA
 * simulated this heap at compile time), the buffers live at the peak, and every program's
 * peak.
 */

import type { MemoryViewer } from "../api";
import { sequenceLineChart } from "../components/charts";
import { at, card, metric, metrics, note } from "../components/metric";
import { add, grid, tableCard } from "./common";
import { sequenceData } from "./memory_viewer_data";
import type { PageContext, ToolPage } from "./types";

const CHART = "memory_sequence";

function render(root: HTMLElement, context: PageContext): void {
  const data = context.data as MemoryViewer;
  const layout = grid(root);
  if (data.programs.length === 0) {
    add(
      layout,
      card(
        "Memory viewer",
        note(
          "No XLA programs with an HLO proto in this profile (JAX, TensorFlow and TPU profiles carry them).",
          "note",
          { id: "memory-viewer-note" },
        ),
        { id: "memory-viewer-empty" },
        true,
      ),
    );
    return;
  }
  add(
    layout,
    card(
      `Program: ${data.program}`,
      metrics([
        metric("peak_bytes", at(data, "peak_bytes"), "Peak"),
        metric(
          "peak_step",
          data.peak_step === null ? "no heap trace" : at(data, "peak_step"),
          "Peak at heap event",
        ),
        metric(
          "peak_instruction",
          data.peak_instruction || "-",
          "Peak at instruction",
        ),
        metric(
          "indefinite_bytes",
          at(data, "indefinite_bytes"),
          "Parameters, outputs, constants",
        ),
        metric(
          "live_buffers_at_peak",
          at(data, "live_buffers_at_peak"),
          "Buffers live at the peak",
        ),
        metric("memory_space", at(data, "memory_space"), "Memory space"),
      ]),
      { id: "memory-viewer-summary", "data-program": data.program },
      true,
    ),
    card(
      "Memory over the program's order",
      [
        sequenceLineChart(
          CHART,
          `Memory of ${data.program} over its heap events`,
          "heap event",
          sequenceData(data),
        ),
        note(
          "Program order, not time: the bytes XLA's heap simulation holds after each event (the buffers a compiled program needs), plus its parameters, outputs and constants throughout.",
          "note",
        ),
      ],
      { id: "memory-viewer-chart" },
      true,
    ),
    tableCard(context, "buffers_at_peak", "Buffers live at the peak"),
    tableCard(context, "programs", "Programs by peak"),
    tableCard(context, "memory_over_sequence", "Heap events"),
  );
}

export const memoryViewerPage: ToolPage = { tables: true, render };
