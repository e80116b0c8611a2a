/** kernel_stats: the GPU kernels by (name, framework op, launch configuration). */

import type { KernelStats } from "../api";
import { at, card, metric, metrics, note } from "../components/metric";
import { formatPercent, formatTimeUs } from "../format";
import { add, grid, tableCard } from "./common";
import type { PageContext, ToolPage } from "./types";

function render(root: HTMLElement, context: PageContext): void {
  const data = context.data as KernelStats;
  const layout = grid(root);
  if (data.devices.length === 0) {
    // Only what applies: no GPU, no kernels; say so in one line instead of empty panels.
    add(layout, card("Kernels", note("No GPU in this profile: kernel stats list the CUDA or ROCm kernels of a GPU trace.", "note", { id: "no-gpu" }), { id: "kernel-summary" }, true));
    return;
  }
  const tensorCore = data.rows.filter((row) => row.is_kernel_using_tensor_core === true).length;
  add(
    layout,
    card(
      "Kernels",
      [
        metrics([
          metric("total_kernel_time_us", at(data, "total_kernel_time_us"), "Total kernel time"),
          metric("kernel_count", data.rows.length, "Kernel rows"),
          metric("tensor_core_kernel_count", tensorCore, "Rows using TensorCore"),
          metric("tensor_core_percent", at(data, "tensor_core_percent"), "TensorCore kernel time", "Share of kernel time in kernels whose names say TensorCore"),
          metric("kernel_devices", data.devices.join(", "), "Devices"),
        ]),
        data.rows.length === 0 ? note("No GPU kernels in this profile.") : null,
        data.rows.length > 0
          ? note(`TensorCore kernels (by name): ${formatPercent(data.tensor_core_percent)} of kernel time (${formatTimeUs(data.tensor_core_time_us)}).`, "note", {
              id: "tensor-core-share",
            })
          : null,
      ],
      { id: "kernel-summary" },
      true,
    ),
    tableCard(context, "kernels", "Kernel stats"),
  );
}

export const kernelStatsPage: ToolPage = { tables: true, render };
