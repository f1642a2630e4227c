import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    environment: "jsdom",
    include: ["test/**/*.test.js"],
    css: false,
    // Speed is the benchmarks' job (benchmarks/widget_render.py); on a loaded 2-core machine a
    // layout of a few thousand nodes in jsdom can take longer than vitest's default 5 s.
    testTimeout: 60000,
  },
});
