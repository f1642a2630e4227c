// The widget's layout alone, in node (V8, as in chromium), on trace JSON files:
//   node benchmarks/widget_layout.mjs trace.json [...]   (run by benchmarks/widget_render.py)
// Prints one JSON line per file: the backward view's nodes as drawn with everything expanded
// (shared leaves copied per use), and the median of 3 runs of view -> fold -> layout, in ms.
import fs from "node:fs";
import { prepareView } from "../js/src/fold.js";
import { groupPaths, visibleGraph } from "../js/src/groups.js";
import { layout } from "../js/src/layout.js";
import { indexTrace } from "../js/src/trace.js";
import { backwardView } from "../js/src/views.js";

for (const file of process.argv.slice(2)) {
  const trace = JSON.parse(fs.readFileSync(file, "utf8"));
  const times = [];
  let drawn = 0;
  for (let run = 0; run < 3; run++) {
    const index = indexTrace(trace);
    const start = performance.now();
    const view = prepareView(backwardView(index), index.modules, "down");
    const visible = visibleGraph(view, new Set(), index.modules);
    layout(visible, groupPaths(view, index.modules));
    times.push(performance.now() - start);
    drawn = visible.nodes.length;
  }
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({ file, drawn, ms: times[1] }));
}
