/**
 * The memory_viewer chart's series, without the DOM: the bytes in use after each heap
 * event of the program (x: the event's index, as the tool's `points` give it), and the
 * peak as one marker point. A program with no heap trace has no points: its memory is
 * its parameters, outputs and constants throughout, so the chart is one flat level.
 */

import type { MemoryViewer } from "../api";
import type { LineSeries } from "../components/chart-data";

export function sequenceData(data: MemoryViewer): { datasets: LineSeries[] } {
  const base = data.indefinite_bytes + data.untraced_bytes;
  const points =
    data.points.length > 0
      ? data.points.map((point) => ({ x: point.step, y: point.bytes }))
      : [{ x: 0, y: base }];
  const datasets: LineSeries[] = [
    {
      label: "In use",
      key: "bytes",
      data: points,
      borderColor: "#1a73e8",
      backgroundColor: "rgba(26, 115, 232, 0.15)",
    },
    {
      label: "Parameters, outputs, constants",
      key: "indefinite_bytes",
      data: points.map((point) => ({ x: point.x, y: base })),
      borderColor: "#9aa0a6",
      backgroundColor: "rgba(154, 160, 166, 0.15)",
    },
  ];
  if (data.peak_step !== null) {
    datasets.push({
      label: `Peak (event ${data.peak_step})`,
      key: "peak",
      data: [{ x: data.peak_step, y: data.peak_bytes }],
      borderColor: "#d93025",
      backgroundColor: "#d93025",
    });
  }
  return { datasets };
}
