import { defineConfig } from "vitest/config";

/**
 * The build lands where the Python package serves it from (stepscope serve), so a wheel
 * carries the page; that folder is generated, hence emptyOutDir. base './' keeps asset
 * links relative, so the page works whatever prefix the server is reached under.
 */
export default defineConfig({
  base: "./",
  build: {
    outDir: "../src/stepscope/dashboard/static",
    emptyOutDir: true,
    assetsDir: "assets",
    // One chunk is fine: the page is one screen, and chart.js is most of it.
    chunkSizeWarningLimit: 1000,
  },
  server: {
    // `npm run dev` against a running `stepscope serve --port 9001`.
    proxy: { "/api": "http://127.0.0.1:9001" },
  },
  test: {
    environment: "node",
    include: ["test/**/*.test.ts"],
    // The zoom plugin's hammerjs needs a window to load (test/stubs/chartjs-plugin-zoom.ts);
    // the build and the browser tests use the real plugin.
    alias: { "chartjs-plugin-zoom": new URL("./test/stubs/chartjs-plugin-zoom.ts", import.meta.url).pathname },
  },
});
