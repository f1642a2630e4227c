import { defineConfig } from "vitest/config";
import { TRACE_SCHEMA_VERSION } from "./trace-schema-version.mjs";

export default defineConfig({
  define: { TRACE_SCHEMA_VERSION },
  test: {
    environment: "jsdom",
    include: ["test/**/*.test.js"],
    css: false,
    // Speed is the benchmarks' job (benchmarks/widget_render.py); on a loaded 2-core machine a
    // layout of a few thousand nodes in jsdom can take longer than vitest's default 5 s.
    testTimeout: 60000,
  },
});
