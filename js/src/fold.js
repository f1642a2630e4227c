// What makes a large graph without modules drawable: shared leaves drawn once per use, repeated
// loop bodies and long chains folded into groups, and a cost estimate before any layout.
//
// All of it works on a view ({ nodes, edges }, views.js) and returns a new one; groups made here
// are ordinary groups (groups.js) whose paths start with LOOP_PREFIX or CHAIN_PREFIX, with a
// short name (the box title), a label (the folded node) and a note (the inspector: what the group
// is, since it is not a module class).

import { rankLayers } from "./layered.js";

export const COPY_SEPARATOR = "~"; // "n5~2": the third drawn copy of node n5
export const COPY_SPAN = 4; // ranks; a leaf whose uses spread wider is drawn once per use
export const COPY_CHAIN = 3; // nodes; the longest chain that is copied with its leaf
export const FOLD_MIN_NODES = 150; // views this small are drawn as they are
export const MIN_REPEATS = 3; // a loop body must repeat this often to be folded
export const MAX_PERIOD = 80; // nodes on the loop's main path per repetition, at most
export const MIN_LOOP_PATH = 24; // nodes of the main path a loop must cover to be folded
export const MIN_CHAIN = 8; // single-input nodes in a row that are folded as a chain
// A small view (under FOLD_MIN_NODES) is drawn whole, but a loop in it is still found and made
// one group, drawn open with its "× N" title: a click on the title rolls it into one node, a
// click on that node unrolls it. Only a block of at least two nodes, covering this many.
export const MIN_SMALL_LOOP_PATH = 8;
export const LOOP_PREFIX = "loop";
export const CHAIN_PREFIX = "chain";
export const PART_PREFIX = "part";
export const PART_SIZE = 1000; // nodes in a band of ranks (what is left of a huge view)
// Nodes a redraw may lay out. Only what is on screen is drawn (draw.js), so this bounds the
// layout and the view's bookkeeping (js/README.md); above it a view stays (partly) folded and the
// status line offers the selected node's neighbourhood instead.
export const LAYOUT_BUDGET = 8000;

/** The node a drawn id stands for: a copy's original, or the id itself. */
export function originalId(id) {
  if (typeof id !== "string" || id.startsWith("group:")) return id;
  const at = id.indexOf(COPY_SEPARATOR);
  return at < 0 ? id : id.slice(0, at);
}

/** Index a view: node index by id, and edges by node (as arrays of edge indexes). */
function indexView(view) {
  const indexOf = new Map(view.nodes.map((node, i) => [node.id, i]));
  const outs = view.nodes.map(() => []);
  const ins = view.nodes.map(() => []);
  view.edges.forEach((edge, e) => {
    const v = indexOf.get(edge.from);
    const w = indexOf.get(edge.to);
    if (v === undefined || w === undefined || v === w) return;
    outs[v].push(e);
    ins[w].push(e);
  });
  return { indexOf, outs, ins };
}

/** The ranks of a view's nodes, as the layout would give them. */
function viewRanks(view, { indexOf }) {
  const from = [];
  const to = [];
  for (const edge of view.edges) {
    const v = indexOf.get(edge.from);
    const w = indexOf.get(edge.to);
    if (v === undefined || w === undefined || v === w) continue;
    from.push(v);
    to.push(w);
  }
  return rankLayers(view.nodes.length, from, to);
}

/** Draw a shared leaf once per use. A node used by several others whose uses lie more than
 * COPY_SPAN ranks apart (a weight read at every step of a loop: its AccumulateGrad in the
 * backward view, the leaf tensor in the forward view) would send an edge from every use to one
 * place, across the whole graph. Instead each use gets a copy of it, and of the short chain it
 * hangs on (TBackward0 -> AccumulateGrad; a leaf -> t -> its transpose), with the id
 * `original~k`; the copies are the same node for selection and the inspector (originalId).
 *
 * `towardLeaf` is "down" in the backward view (leaves are sinks) and "up" in the forward view
 * (leaves are sources). */
export function copySharedLeaves(view, towardLeaf = "down") {
  const index = indexView(view);
  const down = towardLeaf === "down";
  const uses = (v) => (down ? index.ins[v] : index.outs[v]); // edges from the users
  const onward = (v) => (down ? index.outs[v] : index.ins[v]); // edges towards the leaf
  const userOf = (e) => index.indexOf.get(down ? view.edges[e].from : view.edges[e].to);
  const nextOf = (e) => index.indexOf.get(down ? view.edges[e].to : view.edges[e].from);
  let ranks = null;
  const shared = []; // [node index, chain of node indexes behind it]
  view.nodes.forEach((node, v) => {
    if (node.kind === "group" || uses(v).length < 2) return;
    // the chain behind v must end at a leaf and belong to v alone
    const chain = [];
    for (let u = v; onward(u).length; ) {
      if (onward(u).length !== 1 || chain.length >= COPY_CHAIN) return;
      u = nextOf(onward(u)[0]);
      if (uses(u).length !== 1) return;
      chain.push(u);
    }
    ranks ||= viewRanks(view, index);
    let lo = Infinity;
    let hi = -Infinity;
    for (const e of uses(v)) {
      lo = Math.min(lo, ranks[userOf(e)]);
      hi = Math.max(hi, ranks[userOf(e)]);
    }
    if (hi - lo > COPY_SPAN) shared.push([v, chain]);
  });
  if (!shared.length) return view;
  const replaced = new Set();
  const copyNodes = [];
  const copyEdges = [];
  const redirected = new Map(); // edge index -> the copy id it now reaches
  for (const [v, chain] of shared) {
    const members = [v, ...chain];
    for (const u of members) replaced.add(u);
    const count = uses(v).length;
    uses(v).forEach((e, k) => {
      const idOf = (u) => `${view.nodes[u].id}${COPY_SEPARATOR}${k}`;
      for (const u of members) {
        const node = view.nodes[u];
        const sub = u === v ? `${node.sub ? `${node.sub} · ` : ""}used ×${count}` : node.sub;
        copyNodes.push({ ...node, id: idOf(u), sub, copyOf: node.id, copies: count, role: `${node.role || ""} copy`.trim() });
      }
      redirected.set(e, idOf(v));
      for (let i = 1; i < members.length; i++) {
        const [a, b] = down ? [idOf(members[i - 1]), idOf(members[i])] : [idOf(members[i]), idOf(members[i - 1])];
        const original = view.edges[onward(members[i - 1])[0]];
        copyEdges.push({ ...original, from: a, to: b });
      }
    });
  }
  const nodes = [];
  view.nodes.forEach((node, v) => {
    if (!replaced.has(v)) nodes.push(node);
  });
  nodes.push(...copyNodes);
  const edges = [];
  view.edges.forEach((edge, e) => {
    if (redirected.has(e)) edges.push(down ? { ...edge, to: redirected.get(e) } : { ...edge, from: redirected.get(e) });
    else if (!replaced.has(index.indexOf.get(edge.from)) && !replaced.has(index.indexOf.get(edge.to))) edges.push(edge);
  });
  edges.push(...copyEdges);
  return { ...view, nodes, edges };
}

/** The longest path (by nodes) through the nodes `allowed` (a predicate on node indexes),
 * as node indexes from the top; iterative. */
function longestPath(view, index, allowed) {
  const n = view.nodes.length;
  const from = [];
  const to = [];
  for (const edge of view.edges) {
    const v = index.indexOf.get(edge.from);
    const w = index.indexOf.get(edge.to);
    if (v === undefined || w === undefined || v === w || !allowed(v) || !allowed(w)) continue;
    from.push(v);
    to.push(w);
  }
  const ranks = rankLayers(n, from, to);
  const order = Array.from({ length: n }, (_, v) => v).sort((a, b) => ranks[a] - ranks[b]);
  const length = new Int32Array(n).fill(1);
  const next = new Int32Array(n).fill(-1);
  const outs = Array.from({ length: n }, () => []);
  from.forEach((v, e) => outs[v].push(to[e]));
  for (let i = n - 1; i >= 0; i--) {
    const v = order[i];
    if (!allowed(v)) continue;
    for (const w of outs[v]) {
      if (ranks[w] > ranks[v] && length[w] + 1 > length[v]) {
        length[v] = length[w] + 1;
        next[v] = w;
      }
    }
  }
  let best = -1;
  for (let v = 0; v < n; v++) if (allowed(v) && (best < 0 || length[v] > length[best])) best = v;
  const path = [];
  for (let v = best; v >= 0; v = next[v]) path.push(v);
  return path;
}

/** The longest stretch of `labels` made of one block repeated: { start, period, repeats },
 * or null if nothing repeats MIN_REPEATS times. O(length x MAX_PERIOD). */
export function findRepeat(labels) {
  let best = null;
  for (let period = 1; period <= Math.min(MAX_PERIOD, Math.floor(labels.length / MIN_REPEATS)); period++) {
    let run = 0; // positions i (so far) with labels[i] === labels[i + period], in a row
    for (let i = 0; i + period <= labels.length; i++) {
      const same = i + period < labels.length && labels[i] === labels[i + period];
      if (same) {
        run++;
        continue;
      }
      const repeats = Math.floor((run + period) / period);
      const covered = repeats * period;
      if (repeats >= MIN_REPEATS && (!best || covered > best.repeats * best.period)) {
        best = { start: i - run, period, repeats };
      }
      run = 0;
    }
  }
  return best;
}

/** Fold what a large view repeats. Finds the view's main path (the longest path through the
 * nodes outside every module, then through each large module's own nodes), the longest stretch
 * of it where one block of node names repeats (the body of a loop), and gives each repetition a
 * group `loopK.i` inside a group `loopK` (`m.loopK` inside module m); the nodes beside the main
 * path (a step's loss term, a weight's copy) join the repetition they hang on. Then long chains
 * of single-input nodes outside loops and modules become groups `chainK`, and what is still over
 * half the layout budget, bands of ranks `partK`. Returns { view (nodes with their new groups),
 * modules (class names of the new groups), labels (what a folded node says), loops (paths) }. */
export function foldRepeats(view, takenNames = []) {
  const out = { view, modules: {}, labels: {}, notes: {}, loops: [] };
  const small = view.nodes.length < FOLD_MIN_NODES; // loops only, each one group, left open
  if (small && view.nodes.length < MIN_SMALL_LOOP_PATH) return out;
  const index = indexView(view);
  const n = view.nodes.length;
  const free = (v) => !view.nodes[v].group && view.nodes[v].kind !== "group";
  const groupOf = new Array(n).fill(null);
  // a program's own module may be called "loop1": new group names never take a name in use
  const used = new Set(takenNames); // and the other view's new groups (one modules table)
  for (const node of view.nodes) {
    const parts = String(node.group || "").split(".");
    for (let i = 1; i <= parts.length; i++) used.add(parts.slice(0, i).join("."));
  }
  const fresh = (name) => {
    let path = name;
    while (used.has(path)) path += "_";
    used.add(path);
    return path;
  };
  // Loops are looked for among the nodes outside modules, and inside each large module (an RNN
  // module runs its steps inside itself): a loop in module m becomes m.loopK.
  const sizeOf = new Map();
  for (const node of view.nodes) if (node.kind !== "group") sizeOf.set(node.group || null, (sizeOf.get(node.group || null) || 0) + 1);
  let loops = 0;
  for (const [scope, size] of sizeOf) {
    if (size < (small ? MIN_SMALL_LOOP_PATH : FOLD_MIN_NODES)) continue;
    const inScope = (v) => view.nodes[v].kind !== "group" && (view.nodes[v].group || null) === scope;
    // A loop per pass, on what earlier loops left of the main path.
    const taken = new Uint8Array(n);
    for (let pass = 0; pass < 4; pass++) {
      const path = longestPath(view, index, (v) => inScope(v) && !taken[v]);
      // a name's "#k" (the k-th tensor of that name) differs at every step: it is not compared
      const found = findRepeat(path.map((v) => `${view.nodes[v].kind}:${String(view.nodes[v].label).replace(/#\d+$/, "")}`));
      if (!found || found.period * found.repeats < (small ? MIN_SMALL_LOOP_PATH : MIN_LOOP_PATH) || (small && found.period < 2)) break;
      loops++;
      const path_ = fresh(`${scope ? `${scope}.` : ""}${LOOP_PREFIX}${loops}`);
      const iteration = new Int32Array(n).fill(-1); // -1: not reached; -2: outside the loop
      const queue = [];
      const depth = new Int32Array(n);
      path.forEach((v, i) => {
        const k = Math.floor((i - found.start) / found.period);
        iteration[v] = i >= found.start && k < found.repeats ? k : -2;
        // the path outside the loop blocks the search but does not spread: the loss terms
        // beside the path's head still join their repetitions
        if (iteration[v] >= 0) queue.push(v);
      });
      // nodes beside the path join the nearest repetition (breadth first, both directions),
      // not further than two bodies away
      const reach = Math.max(4, 2 * found.period);
      for (let head = 0; head < queue.length; head++) {
        const v = queue[head];
        if (depth[v] >= reach) continue;
        for (const e of [...index.outs[v], ...index.ins[v]]) {
          const edge = view.edges[e];
          const w = index.indexOf.get(edge.from === view.nodes[v].id ? edge.to : edge.from);
          if (w === undefined || iteration[w] !== -1 || !inScope(w) || taken[w]) continue;
          iteration[w] = iteration[v];
          depth[w] = depth[v] + 1;
          queue.push(w);
        }
      }
      for (let v = 0; v < n; v++) {
        if (iteration[v] < 0) continue;
        // repetition 0 is the top one: the last step in the backward view, the first in the forward
        groupOf[v] = small ? path_ : `${path_}.${iteration[v]}`; // a small loop: one group
        taken[v] = 1;
      }
      for (const v of path) taken[v] = 1; // the rest of the path is not searched again
      const names = path.slice(found.start, found.start + found.period).map((v) => String(view.nodes[v].label).replace(/#\d+$/, ""));
      out.loops.push(path_);
      out.modules[path_] = `loop ×${found.repeats}`;
      out.notes[path_] = `repeated loop body, ${found.repeats} times`;
      // the folded node's text: "×5 Tanh … Mm" (a node's class without "Backward0" is enough)
      const short = (name) => name.replace(/Backward\d*$/, "") || name;
      out.labels[path_] = `×${found.repeats} ${short(names[0])} … ${short(names[names.length - 1])}`;
      for (let k = 0; k < (small ? 0 : found.repeats); k++) {
        out.modules[`${path_}.${k}`] = `repetition ${k + 1} of ${found.repeats}`;
        out.notes[`${path_}.${k}`] = `repetition ${k + 1} of ${found.repeats} of a loop body`;
        out.labels[`${path_}.${k}`] = `${names[0]} … (${k + 1}/${found.repeats})`;
      }
    }
  }
  if (small) {
    if (loops) out.view = { ...view, nodes: view.nodes.map((node, v) => (groupOf[v] ? { ...node, group: groupOf[v] } : node)) };
    return out;
  }
  // chains: single-input, single-output nodes in a row, outside loops and modules
  let chains = 0;
  const single = (v) => free(v) && groupOf[v] === null && index.ins[v].length === 1 && index.outs[v].length === 1;
  const seen = new Uint8Array(n);
  for (let v = 0; v < n; v++) {
    if (seen[v] || !single(v)) continue;
    // walk up to the chain's first node, then down to its last
    let first = v;
    for (let guard = 0; guard < n; guard++) {
      const up = index.indexOf.get(view.edges[index.ins[first][0]].from);
      if (up === undefined || !single(up) || up === v) break;
      first = up;
    }
    const chain = [];
    for (let u = first; u !== undefined && single(u) && !seen[u]; u = index.indexOf.get(view.edges[index.outs[u][0]].to)) {
      seen[u] = 1;
      chain.push(u);
    }
    if (chain.length < MIN_CHAIN) continue;
    chains++;
    const path_ = fresh(`${CHAIN_PREFIX}${chains}`);
    for (const u of chain) groupOf[u] = path_;
    out.modules[path_] = `chain of ${chain.length}`;
    out.notes[path_] = `chain of ${chain.length} nodes with one input and one output each`;
    out.labels[path_] = `${view.nodes[chain[0]].label} … ${view.nodes[chain[chain.length - 1]].label}`;
  }
  // what is still too large to draw whole, with nothing left to fold it by, is cut into bands
  // of ranks (`partK`), so that the cost estimate can always keep a view within the budget
  let parts = 0;
  let loose = 0;
  for (let v = 0; v < n; v++) if (free(v) && groupOf[v] === null) loose++;
  if (loose > LAYOUT_BUDGET / 2) {
    const ranks = viewRanks(view, index);
    const byRank = Array.from({ length: n }, (_, v) => v).filter((v) => free(v) && groupOf[v] === null);
    byRank.sort((a, b) => ranks[a] - ranks[b]);
    for (let i = 0; i < byRank.length; i += PART_SIZE) {
      parts++;
      const band = byRank.slice(i, i + PART_SIZE);
      const path_ = fresh(`${PART_PREFIX}${parts}`);
      for (const v of band) groupOf[v] = path_;
      out.modules[path_] = `ranks ${ranks[band[0]] + 1}-${ranks[band[band.length - 1]] + 1}`;
      out.notes[path_] = `ranks ${ranks[band[0]] + 1}-${ranks[band[band.length - 1]] + 1} of a graph too large to draw whole`;
      out.labels[path_] = `${band.length} nodes, ranks ${ranks[band[0]] + 1}-${ranks[band[band.length - 1]] + 1}`;
    }
  }
  if (!loops && !chains && !parts) return out;
  out.view = { ...view, nodes: view.nodes.map((node, v) => (groupOf[v] ? { ...node, group: groupOf[v] } : node)) };
  return out;
}

/** A view ready to draw: shared leaves copied per use, repeats and chains folded (into groups
 * whose class names are added to `modules`, and whose labels go with the view). */
export function prepareView(view, modules, towardLeaf) {
  const copied = copySharedLeaves(view, towardLeaf);
  const folded = foldRepeats(copied, Object.keys(modules));
  Object.assign(modules, folded.modules);
  return { ...folded.view, groupLabels: folded.labels, groupNotes: folded.notes, loopPaths: folded.loops };
}

/** What a redraw would cost: the drawn nodes and edges (the layout and the SVG are linear in
 * them). */
export function drawCost(visible) {
  return visible.nodes.length + visible.edges.length / 2;
}
