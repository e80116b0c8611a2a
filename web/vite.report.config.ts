import { defineConfig } from "vite";

/**
 * The HTML report's script (report/main.ts): one IIFE file, no chunks and no imports, that
 * Python inlines into the report (src/stepscope/render/html.py), so the report is one file
 * that opens offline. It lands in the package beside the renderer, so a wheel carries it.
 */
export default defineConfig({
  define: { "process.env.NODE_ENV": JSON.stringify("production") },
  build: {
    outDir: "../src/stepscope/render/static",
    emptyOutDir: true,
    lib: { entry: "report/main.ts", formats: ["iife"], name: "stepscopeReport", fileName: () => "report.js" },
    chunkSizeWarningLimit: 1000,
  },
});
