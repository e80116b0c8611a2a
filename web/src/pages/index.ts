/**
 * The registry of tool pages: tool name (XProf's, as /api/tools lists them) -> page.
 * Tools not listed get the generic page, so a server that grows a tool keeps working.
 */

import { criticalPathPage } from "./critical_path";
import { diffPage } from "./diff";
import { distributedPage } from "./distributed";
import { flameGraphPage } from "./flame_graph";
import { frameworkOpStatsPage } from "./framework_op_stats";
import { genericPage } from "./generic";
import { graphViewerPage } from "./graph_viewer";
import { hloStatsPage } from "./hlo_stats";
import { inputPipelinePage } from "./input_pipeline_analyzer";
import { kernelStatsPage } from "./kernel_stats";
import { memoryProfilePage } from "./memory_profile";
import { memoryViewerPage } from "./memory_viewer";
import { opProfilePage } from "./op_profile";
import { overviewPage } from "./overview_page";
import { rooflinePage } from "./roofline_model";
import { traceViewerPage } from "./trace_viewer";
import type { ToolPage } from "./types";

export const PAGES: Record<string, ToolPage> = {
  overview_page: overviewPage,
  input_pipeline_analyzer: inputPipelinePage,
  framework_op_stats: frameworkOpStatsPage,
  kernel_stats: kernelStatsPage,
  op_profile: opProfilePage,
  memory_profile: memoryProfilePage,
  memory_viewer: memoryViewerPage,
  roofline_model: rooflinePage,
  hlo_stats: hloStatsPage,
  graph_viewer: graphViewerPage,
  flame_graph: flameGraphPage,
  critical_path: criticalPathPage,
  trace_viewer: traceViewerPage,
  diff: diffPage,
  distributed: distributedPage,
};

/** The tool's page, or the page its options pick (`modeFor`). */
export function pageFor(tool: string, options?: Record<string, string>): ToolPage {
  const page = PAGES[tool] ?? genericPage;
  return page.modeFor?.(options) ?? page;
}
