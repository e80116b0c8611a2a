/**
 * The trace viewer page: the timeline reads its own endpoints (/api/trace/*), not the
 * tool's /api/data, so it mounts itself and says when its first frame with data is drawn.
 */

import { mountTraceViewer } from "../trace/viewer";
import type { ToolPage } from "./types";

export const traceViewerPage: ToolPage = {
  tables: false,
  render(root) {
    // Only reached by a shell that does not know `mount`; the viewer needs it.
    root.textContent = "The trace viewer needs the page's mount hook.";
  },
  mount(root, context) {
    void mountTraceViewer(root, context);
  },
};
