// The widget's layout alone, in node (V8, as in chromium), on trace JSON files:
//   node benchmarks/widget_layout.mjs trace.json [...]   (run by benchmarks/widget_render.py)
// Prints one JSON line per file: the backward view's nodes as drawn with everything expanded
// (shared leaves copied per use), and the median of 3 runs of view -> fold -> layout, in ms
// (wall clock, split in prepare and layout; and CPU time).
import fs from "node:fs";
import { prepareView } from "../js/src/fold.js";
import { groupPaths, visibleGraph } from "../js/src/groups.js";
import { layout } from "../js/src/layout.js";
import { indexTrace } from "../js/src/trace.js";
import { backwardView } from "../js/src/views.js";

for (const file of process.argv.slice(2)) {
  const trace = JSON.parse(fs.readFileSync(file, "utf8"));
  const runs = [];
  let drawn = 0;
  for (let run = 0; run < 3; run++) {
    const index = indexTrace(trace);
    const start = performance.now();
    const cpu = process.cpuUsage();
    const view = prepareView(backwardView(index), index.modules, "down");
    const prepared = performance.now();
    const visible = visibleGraph(view, new Set(), index.modules);
    layout(visible, groupPaths(view, index.modules));
    const end = performance.now();
    const used = process.cpuUsage(cpu);
    // cpu: the same in CPU time, which a machine shared with other work does not inflate
    runs.push({ ms: end - start, prepare: prepared - start, layout: end - prepared, cpu: (used.user + used.system) / 1000 });
    drawn = visible.nodes.length;
  }
  runs.sort((a, b) => a.ms - b.ms);
  // ms: view + fold + layout; prepare: view + fold (copies, loops); layout: visibleGraph + layout
  console.log(JSON.stringify({ file, drawn, ...runs[1] }));
}
