// Our own layered (Sugiyama-style) layout, for graphs too large for dagre: every pass is linear
// or n log n in the size of the graph, none is recursive, none is quadratic.
//
//   1. ranks: each node near its parents (`rankLayers`, shared with dagre's ranker);
//   2. long edges get one dummy point per rank they cross, within a budget (beyond it an edge
//      is drawn straight, so that a pathological graph cannot blow up the layout);
//   3. order within ranks: depth-first from the top, then a few sweeps of barycentre ordering;
//   4. x: each rank packed in that order, then moved towards its neighbours' mean x by
//      isotonic regression (pool adjacent violators, which keeps order and spacing), a few times
//      up and down; y: one row per rank;
//   5. edges: polylines from the bottom of the parent through the dummies to the top of the child.
//
// js/README.md has the measurements that chose this over dagre for large graphs.

/** Ranks (0 at the top) for `n` nodes joined by edges `from[i] -> to[i]` (each at least
 * `minlen[i]` ranks apart, 1 if not given), keeping each node near its parents.
 *
 * Plain longest path (each node as low as its children allow) puts every sink on the bottom
 * rank, and with it the short chains that hang off the graph (nn.Linear's TBackward0 and its
 * weight's AccumulateGrad), each on an edge as long as the graph. Here each node with parents
 * sits right below its lowest parent, unless it has more children than parents, when it sits
 * right above its highest child (as a source does: a weight leaf of the forward view goes right
 * above the op that reads it). Edges that close a cycle (none in an autograd graph) are
 * ignored. Linear time. */
export function rankLayers(n, from, to, minlen = null) {
  const m = from.length;
  const len = (e) => (minlen ? minlen[e] : 1);
  const { outStart, outEdges, inStart, inEdges } = adjacency(n, from, to);
  // topological order (Kahn); nodes left over sit on a cycle and take what their edges give
  const order = new Int32Array(n);
  const inLeft = new Int32Array(n);
  for (let e = 0; e < m; e++) inLeft[to[e]]++;
  let head = 0;
  let tail = 0;
  for (let v = 0; v < n; v++) if (inLeft[v] === 0) order[tail++] = v;
  const placed = new Uint8Array(n);
  while (head < tail) {
    const v = order[head++];
    placed[v] = 1;
    for (let k = outStart[v]; k < outStart[v + 1]; k++) {
      const w = to[outEdges[k]];
      if (--inLeft[w] === 0) order[tail++] = w;
    }
  }
  if (tail < n) for (let v = 0; v < n; v++) if (!placed[v]) order[tail++] = v;
  const position = new Int32Array(n);
  for (let i = 0; i < n; i++) position[order[i]] = i;
  const forward = (e) => position[from[e]] < position[to[e]]; // false: closes a cycle
  // as low as possible (longest path to a sink), from the bottom up
  const low = new Float64Array(n);
  for (let i = n - 1; i >= 0; i--) {
    const v = order[i];
    let rank = Infinity;
    for (let k = outStart[v]; k < outStart[v + 1]; k++) {
      const e = outEdges[k];
      if (forward(e)) rank = Math.min(rank, low[to[e]] - len(e));
    }
    low[v] = rank === Infinity ? 0 : rank;
  }
  // What hangs off the graph: a node "hangs above" (feeds one node only, and only from sources
  // or nodes that hang above: the forward view's xs -> select -> xs[t] -> mm <- w_ih) and goes
  // right above its consumer; one that "hangs below" (read by one node, feeding only sinks or
  // nodes that hang below: the backward view's TBackward0 -> AccumulateGrad) right below it.
  const parentsOf = (v) => {
    let count = 0;
    for (let k = inStart[v]; k < inStart[v + 1]; k++) if (forward(inEdges[k])) count++;
    return count;
  };
  const childrenOf = (v) => {
    let count = 0;
    for (let k = outStart[v]; k < outStart[v + 1]; k++) if (forward(outEdges[k])) count++;
    return count;
  };
  const hangsAbove = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const v = order[i];
    if (childrenOf(v) !== 1 || parentsOf(v) === 0) continue;
    let all = 1;
    for (let k = inStart[v]; k < inStart[v + 1] && all; k++) {
      const e = inEdges[k];
      if (forward(e) && parentsOf(from[e]) !== 0 && !hangsAbove[from[e]]) all = 0;
    }
    hangsAbove[v] = all;
  }
  // then top down: right below the lowest parent, or as low as allowed (right above the
  // highest child) for sources, nodes that hang above, and nodes with more children than parents
  const rank = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const v = order[i];
    let below = -Infinity;
    let parents = 0;
    for (let k = inStart[v]; k < inStart[v + 1]; k++) {
      const e = inEdges[k];
      if (!forward(e)) continue;
      parents++;
      below = Math.max(below, rank[from[e]] + len(e));
    }
    let children = 0;
    for (let k = outStart[v]; k < outStart[v + 1]; k++) if (forward(outEdges[k])) children++;
    rank[v] = parents === 0 || children > parents || hangsAbove[v] ? Math.max(below, low[v]) : below;
  }
  // a source or a wide node may now sit well above children that moved up: pull it down
  for (let i = n - 1; i >= 0; i--) {
    const v = order[i];
    let parents = 0;
    let children = 0;
    let above = Infinity;
    for (let k = inStart[v]; k < inStart[v + 1]; k++) if (forward(inEdges[k])) parents++;
    for (let k = outStart[v]; k < outStart[v + 1]; k++) {
      const e = outEdges[k];
      if (!forward(e)) continue;
      children++;
      above = Math.min(above, rank[to[e]] - len(e));
    }
    if (children && (parents === 0 || children > parents || hangsAbove[v])) rank[v] = Math.max(rank[v], above);
  }
  let top = Infinity;
  for (let v = 0; v < n; v++) top = Math.min(top, rank[v]);
  const ranks = new Int32Array(n);
  for (let v = 0; v < n; v++) ranks[v] = rank[v] - top;
  return ranks;
}

/** Edge lists by node, as compressed arrays (edge indexes). */
function adjacency(n, from, to) {
  const m = from.length;
  const outStart = new Int32Array(n + 1);
  const inStart = new Int32Array(n + 1);
  for (let e = 0; e < m; e++) {
    outStart[from[e] + 1]++;
    inStart[to[e] + 1]++;
  }
  for (let v = 0; v < n; v++) {
    outStart[v + 1] += outStart[v];
    inStart[v + 1] += inStart[v];
  }
  const outEdges = new Int32Array(m);
  const inEdges = new Int32Array(m);
  const outFill = outStart.slice(0, n);
  const inFill = inStart.slice(0, n);
  for (let e = 0; e < m; e++) {
    outEdges[outFill[from[e]]++] = e;
    inEdges[inFill[to[e]]++] = e;
  }
  return { outStart, outEdges, inStart, inEdges };
}

export const LAYERED_OPTIONS = {
  nodesep: 24, // px between boxes in a rank
  dummysep: 10, // px taken by an edge passing through a rank
  ranksep: 34, // px between ranks
  margin: 16,
  sweeps: 4, // barycentre sweeps (each down then up)
  placements: 3, // coordinate passes (from above, from below, from above): more drift sideways
  dummyBudget: 4, // dummy points allowed per real node; edges beyond it are drawn straight
};

/** Lay out `input` ({ nodes: [{ id, width, height }], edges: [{ v, w }] }) top to bottom.
 * Returns { positions: Map id -> { x, y, width, height } (centres), points: array (per input
 * edge) of polylines, width, height }. */
export function layeredLayout(input, options = {}) {
  const opt = { ...LAYERED_OPTIONS, ...options };
  const n = input.nodes.length;
  const indexOf = new Map();
  input.nodes.forEach((node, i) => indexOf.set(node.id, i));
  // real edges, self-loops and unknown ends dropped; parallel edges kept once for the layout
  const from = [];
  const to = [];
  const seenPair = new Set();
  const edgeOfInput = input.edges.map((edge) => {
    const v = indexOf.get(edge.v);
    const w = indexOf.get(edge.w);
    if (v === undefined || w === undefined || v === w) return -1;
    const key = v * n + w;
    if (seenPair.has(key)) return -2;
    seenPair.add(key);
    from.push(v);
    to.push(w);
    return from.length - 1;
  });
  const rankOfReal = rankLayers(n, from, to);
  // An edge that closes a cycle (rank not increasing) is laid out reversed.
  const reversed = from.map((v, e) => rankOfReal[v] >= rankOfReal[to[e]]);
  // --- long edges: dummy nodes, shortest edges first, within the budget ---------------------
  const width = input.nodes.map((node) => node.width);
  const height = input.nodes.map((node) => node.height);
  const rank = Array.from(rankOfReal);
  const chainOf = new Array(from.length); // edge -> the node indexes it passes through, top down
  const segFrom = [];
  const segTo = [];
  const spans = from.map((v, e) => {
    const a = reversed[e] ? to[e] : v;
    const b = reversed[e] ? v : to[e];
    return { e, a, b, span: rank[b] - rank[a] };
  });
  spans.sort((p, q) => p.span - q.span);
  let budget = opt.dummyBudget * Math.max(n, 50);
  for (const { e, a, b, span } of spans) {
    const chain = [a];
    if (span > 1 && span - 1 <= budget) {
      budget -= span - 1;
      for (let r = rank[a] + 1; r < rank[b]; r++) {
        const d = rank.length;
        rank.push(r);
        width.push(opt.dummysep);
        height.push(0);
        chain.push(d);
      }
    }
    chain.push(b);
    chainOf[e] = chain;
    for (let k = 1; k < chain.length; k++) {
      // a straight edge over several ranks is not a segment: it does not pull the order
      if (rank[chain[k]] - rank[chain[k - 1]] !== 1) continue;
      segFrom.push(chain[k - 1]);
      segTo.push(chain[k]);
    }
  }
  const total = rank.length;
  const { outStart, outEdges, inStart, inEdges } = adjacency(total, segFrom, segTo);
  // --- order within ranks --------------------------------------------------------------------
  let rankCount = 0;
  for (let v = 0; v < total; v++) rankCount = Math.max(rankCount, rank[v] + 1);
  const layers = Array.from({ length: rankCount }, () => []);
  const pos = new Float64Array(total); // index within its rank
  {
    // depth-first from the top rank's nodes, children in edge order (dagre's initial order)
    const seen = new Uint8Array(total);
    const starts = [];
    for (let v = 0; v < n; v++) if (inStart[v + 1] === inStart[v]) starts.push(v);
    starts.sort((p, q) => rank[p] - rank[q] || p - q);
    for (let v = 0; v < total; v++) if (!seen[v] && inStart[v + 1] !== inStart[v]) starts.push(v); // cycles
    const stack = [];
    for (const start of starts) {
      stack.push(start);
      while (stack.length) {
        const v = stack.pop();
        if (seen[v]) continue;
        seen[v] = 1;
        pos[v] = layers[rank[v]].length;
        layers[rank[v]].push(v);
        for (let k = outStart[v + 1] - 1; k >= outStart[v]; k--) {
          const w = segTo[outEdges[k]];
          if (!seen[w]) stack.push(w);
        }
      }
    }
  }
  const key = new Float64Array(total);
  const sortLayer = (layer, upward) => {
    for (const v of layer) {
      let sum = 0;
      let count = 0;
      if (upward) {
        for (let k = outStart[v]; k < outStart[v + 1]; k++) {
          sum += pos[segTo[outEdges[k]]];
          count++;
        }
      } else {
        for (let k = inStart[v]; k < inStart[v + 1]; k++) {
          sum += pos[segFrom[inEdges[k]]];
          count++;
        }
      }
      // a node with no neighbours on that side keeps its place
      key[v] = count ? sum / count : pos[v];
    }
    layer.sort((p, q) => key[p] - key[q] || pos[p] - pos[q]);
    layer.forEach((v, i) => (pos[v] = i));
  };
  for (let s = 0; s < opt.sweeps; s++) {
    for (let r = 1; r < rankCount; r++) sortLayer(layers[r], false);
    for (let r = rankCount - 2; r >= 0; r--) sortLayer(layers[r], true);
  }
  // --- coordinates ---------------------------------------------------------------------------
  const x = new Float64Array(total);
  const gap = (p, q) => (width[p] + width[q]) / 2 + (p < n && q < n ? opt.nodesep : opt.dummysep);
  for (const layer of layers) {
    let at = 0;
    layer.forEach((v, i) => {
      if (i) at += gap(layer[i - 1], v);
      x[v] = at;
    });
  }
  // How much a node matters to the drawing's straightness: a node that carries the graph on
  // (has neighbours on both sides, or is an edge's dummy) much more than one hanging off it (a
  // leaf's AccumulateGrad). Without this a chain with a leaf beside every node drifts sideways
  // by half a box per rank.
  // Measured as the ranks of graph on its shorter side (1 + the longest path up to a source or
  // down to a sink, whichever is shorter): the spine of a deep graph weighs most.
  // (Counted in real nodes; an edge's dummy counts a quarter, so that of two paths over as
  // many ranks the one with more nodes is the spine.)
  const step = (v) => (v < n ? 1 : 0.25);
  const depthAbove = new Float64Array(total);
  const depthBelow = new Float64Array(total);
  for (let r = 0; r < rankCount; r++) {
    for (const v of layers[r]) for (let k = inStart[v]; k < inStart[v + 1]; k++) depthAbove[v] = Math.max(depthAbove[v], depthAbove[segFrom[inEdges[k]]] + step(v));
  }
  for (let r = rankCount - 1; r >= 0; r--) {
    for (const v of layers[r]) for (let k = outStart[v]; k < outStart[v + 1]; k++) depthBelow[v] = Math.max(depthBelow[v], depthBelow[segTo[outEdges[k]]] + step(v));
  }
  const carries = (v) => 1 + Math.min(depthAbove[v], depthBelow[v]);
  const place = (layer, fromAbove) => {
    if (!layer.length) return;
    const wanted = new Float64Array(layer.length);
    const weight = new Float64Array(layer.length);
    layer.forEach((v, i) => {
      let sum = 0;
      let total = 0;
      // pulled by its neighbours on both sides (Gauss-Seidel on the edges' squared slants);
      // an edge on a longest path through both ends (a graph's spine) pulls hardest, so that
      // the spine comes out straight and what joins it from the side bends instead
      const pull = (a, b, u) => {
        const onSpine = depthAbove[b] === depthAbove[a] + step(b) && depthBelow[a] === depthBelow[b] + step(a);
        const strength = carries(u) * (onSpine ? 20 : 1) * (fromAbove === (u === a) ? 1 : 0.5);
        sum += x[u] * strength;
        total += strength;
      };
      for (let k = inStart[v]; k < inStart[v + 1]; k++) pull(segFrom[inEdges[k]], v, segFrom[inEdges[k]]);
      for (let k = outStart[v]; k < outStart[v + 1]; k++) pull(v, segTo[outEdges[k]], segTo[outEdges[k]]);
      // no neighbour on that side: stay where it is, holding on lightly
      wanted[i] = total ? sum / total : x[v];
      // an edge's dummy holds its place hardest: long edges come out straight
      weight[i] = total ? total * carries(v) * (v >= n ? 20 : 1) : 0.01;
    });
    isotonicPlace(layer, wanted, weight, gap, x);
  };
  for (let p = 0; p < opt.placements; p++) {
    if (p % 2 === 0) for (let r = 1; r < rankCount; r++) place(layers[r], true);
    else for (let r = rankCount - 2; r >= 0; r--) place(layers[r], false);
  }
  let minX = Infinity;
  let maxX = -Infinity;
  for (let v = 0; v < total; v++) {
    minX = Math.min(minX, x[v] - width[v] / 2);
    maxX = Math.max(maxX, x[v] + width[v] / 2);
  }
  if (!total) minX = maxX = 0;
  const rowTop = new Float64Array(rankCount + 1);
  const rowHeight = new Float64Array(rankCount);
  for (let v = 0; v < total; v++) rowHeight[rank[v]] = Math.max(rowHeight[rank[v]], height[v]);
  rowTop[0] = opt.margin;
  for (let r = 0; r < rankCount; r++) rowTop[r + 1] = rowTop[r] + rowHeight[r] + opt.ranksep;
  const cx = (v) => x[v] - minX + opt.margin;
  const cy = (v) => rowTop[rank[v]] + rowHeight[rank[v]] / 2;
  const positions = new Map();
  input.nodes.forEach((node, v) => positions.set(node.id, { x: cx(v), y: cy(v), width: width[v], height: height[v] }));
  const points = edgeOfInput.map((e, i) => {
    if (e === -1) return [];
    if (e === -2) {
      const edge = input.edges[i];
      e = from.findIndex((v, k) => v === indexOf.get(edge.v) && to[k] === indexOf.get(edge.w));
    }
    const chain = chainOf[e];
    const line = chain.map((v, k) => {
      if (k === 0) return { x: cx(v), y: cy(v) + height[v] / 2 };
      if (k === chain.length - 1) return { x: cx(v), y: cy(v) - height[v] / 2 };
      return { x: cx(v), y: cy(v) };
    });
    return reversed[e] ? line.reverse() : line;
  });
  const graphHeight = rankCount ? rowTop[rankCount] - opt.ranksep + opt.margin : 2 * opt.margin;
  return { positions, points, width: maxX - minX + 2 * opt.margin, height: graphHeight };
}

/** Put a rank's nodes as near their wanted x as the order and spacing allow (weighted least
 * squares): with offsets o_i (each box's least distance from the first), x_i - o_i must not
 * decrease, which pool-adjacent-violators solves in one pass. */
function isotonicPlace(layer, wanted, weight, gap, x) {
  const count = layer.length;
  const offset = new Float64Array(count);
  for (let i = 1; i < count; i++) offset[i] = offset[i - 1] + gap(layer[i - 1], layer[i]);
  const blockValue = [];
  const blockWeight = [];
  const blockSize = [];
  for (let i = 0; i < count; i++) {
    let value = wanted[i] - offset[i];
    let w = weight[i];
    let size = 1;
    while (blockValue.length && blockValue[blockValue.length - 1] >= value) {
      const pw = blockWeight.pop();
      value = (blockValue.pop() * pw + value * w) / (pw + w);
      w += pw;
      size += blockSize.pop();
    }
    blockValue.push(value);
    blockWeight.push(w);
    blockSize.push(size);
  }
  let i = 0;
  for (let b = 0; b < blockValue.length; b++) {
    for (let k = 0; k < blockSize[b]; k++, i++) x[layer[i]] = blockValue[b] + offset[i];
  }
}
