/**
 * roofline_model: the device peaks and where they came from, the log-log roofline chart
 * (op rows as points, the memory and compute roofs as lines) and the devices, programs, ops
 * and unestimated tables. On a PyTorch profile the FLOPs are estimates from the ops'
 * recorded shapes, and the page says how many ops had none.
 */

import type { RooflineModel } from "../generated/roofline_model";
import { rooflineChart } from "../components/charts";
import { at, card, metric, metrics, note } from "../components/metric";
import { rooflineData } from "../components/roofline-data";
import { add, grid, tableCard } from "./common";
import type { PageContext, ToolPage } from "./types";

const CHART = "roofline";
/**
 * Hidden until asked for (so that the rest fit 1280 px): the level (the table's own:
 * every row's the same), the attainable rate (the roofline at the row's intensity: the
 * roofline fraction is the achieved rate over it) and the FLOPs and bytes (the GFLOP/s and
 * GB/s shown times the time; the intensity is their ratio).
 */
export const ROOFLINE_LEAST_READ = ["level", "attainable_gflops_per_second", "flops", "bytes_accessed"] as const;

function render(root: HTMLElement, context: PageContext): void {
  const data = context.data as RooflineModel;
  const layout = grid(root);
  if (data.ops.length === 0) {
    add(layout, card("Roofline", note("No XLA ops, and no PyTorch ops with kernels, in this profile.", "note", { id: "no-ops" }), { id: "roofline-summary" }, true));
    return;
  }
  const chart = rooflineData(data);
  const chips = data.peaks.map((peaks) => `${peaks.device}: ${peaks.chip ?? "unknown chip"} (${peaks.source || "no peaks"})`).join("; ");
  add(
    layout,
    card(
      "Roofline",
      [
        metrics([
          metric("peak_tflops", at(data, "peak_tflops"), "Peak TFLOP/s"),
          metric("peak_gbps", at(data, "peak_gbps"), "Peak GB/s"),
          metric("ridge_point", at(data, "ridge_point"), "Ridge (FLOP/byte)"),
          metric("roofline_points", chart.points.length, "Ops plotted"),
          metric("unestimated_ops", at(data, "unestimated_ops"), "Ops without FLOPs"),
        ]),
        note(`Peaks: ${chips}.`, "note", { id: "roofline-peaks" }),
        data.source === "shapes"
          ? note(
              `FLOPs and bytes are estimates from the PyTorch ops' recorded input shapes; ${data.unestimated_ops} op rows have none (listed below), ${data.assumed_ops} assumed a default argument${data.assumptions.map((entry) => `; ${entry.ops} op(s): ${entry.assumption}`).join("")}.`,
              "note",
              { id: "roofline-estimates" },
            )
          : null,
        chart.memory.length === 0 ? note("The devices' peaks are unknown or differ: no roofline lines (pass peak_flops and peak_bw).", "warning", { id: "roofline-no-peaks" }) : null,
        rooflineChart(CHART, "Roofline: ops by operational intensity and achieved GFLOP/s", chart),
      ],
      { id: "roofline-summary" },
      true,
    ),
    tableCard(context, "devices", "Devices", { leastRead: ROOFLINE_LEAST_READ }),
    tableCard(context, "programs", data.source === "shapes" ? "Ops by name" : "Programs", { leastRead: ROOFLINE_LEAST_READ }),
    tableCard(context, "ops", data.source === "shapes" ? "Ops by name and shapes" : "HLO ops", { leastRead: ROOFLINE_LEAST_READ }),
    data.unestimated.length > 0 ? tableCard(context, "unestimated", "Longest ops without FLOPs") : null,
  );
}

export const rooflinePage: ToolPage = { tables: true, render };
