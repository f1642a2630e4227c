// Bundle the widget: src/widget.js (and the CSS it imports) -> ../nbgrad/static/widget.{js,css}.
import { build } from "esbuild";
import { statSync } from "node:fs";
import { TRACE_SCHEMA_VERSION } from "./trace-schema-version.mjs";

const outdir = new URL("../nbgrad/static/", import.meta.url).pathname;

await build({
  entryPoints: { widget: "src/widget.js" },
  bundle: true,
  format: "esm",
  minify: true,
  target: "es2020",
  outdir,
  legalComments: "none",
  define: { TRACE_SCHEMA_VERSION },
  logLevel: "warning",
});

const size = statSync(`${outdir}widget.js`).size;
console.log(`nbgrad/static/widget.js: ${(size / 1024).toFixed(1)} KB`);
if (size > 200 * 1024) {
  console.error("the bundle is over the 200 KB budget");
  process.exit(1);
}
