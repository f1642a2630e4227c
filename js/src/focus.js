// Where the first view looks: the loss, and the nodes around it.

/** The drawn id of the loss in a visible graph: in the backward view the root of the last
 * backward pass (else a node drawn as a root, else one nothing points to); in the forward view
 * the output tensor (else the last op's result). `standIn` maps record ids to drawn ids. */
export function lossNodeId(index, view, visible) {
  const drawn = new Set(visible.nodes.map((n) => n.id));
  const shown = (id) => {
    const d = (visible.standIn && visible.standIn.get(id)) || id;
    return drawn.has(d) ? d : null;
  };
  if (view === "backward") {
    for (let i = index.passes.length - 1; i >= 0; i--) {
      for (const root of index.passes[i].roots || []) {
        const d = root && shown(root[0]);
        if (d) return d;
      }
    }
    const roots = visible.nodes.filter((n) => /\broot\b/.test(n.role || ""));
    if (roots.length) return roots[roots.length - 1].id;
  } else {
    const outputs = visible.nodes.filter((n) => n.kind === "tensor" && /\boutput\b/.test(n.role || ""));
    if (outputs.length) return outputs[outputs.length - 1].id;
    const ops = [...index.ops.values()];
    for (let i = ops.length - 1; i >= 0; i--) {
      for (const out of ops[i].outputs || []) {
        const d = shown(out);
        if (d) return d;
      }
    }
  }
  const pointedTo = new Set(visible.edges.map((e) => e.to));
  const top = visible.nodes.find((n) => !pointedTo.has(n.id));
  return top ? top.id : visible.nodes.length ? visible.nodes[0].id : null;
}

/** The ids within `hops` edges of `id` (either direction), `id` included. */
export function neighbourhood(visible, id, hops) {
  const near = new Map();
  for (const e of visible.edges) {
    if (!near.has(e.from)) near.set(e.from, []);
    if (!near.has(e.to)) near.set(e.to, []);
    near.get(e.from).push(e.to);
    near.get(e.to).push(e.from);
  }
  const seen = new Set([id]);
  let ring = [id];
  for (let k = 0; k < hops && ring.length; k++) {
    const next = [];
    for (const v of ring) for (const w of near.get(v) || []) if (!seen.has(w)) (seen.add(w), next.push(w));
    ring = next;
  }
  return seen;
}

/** The bounding box of some laid-out nodes (positions are centres). */
export function boundsOf(ids, positions) {
  let x0 = Infinity;
  let y0 = Infinity;
  let x1 = -Infinity;
  let y1 = -Infinity;
  for (const id of ids) {
    const b = positions.get(id);
    if (!b) continue;
    x0 = Math.min(x0, b.x - b.width / 2);
    y0 = Math.min(y0, b.y - b.height / 2);
    x1 = Math.max(x1, b.x + b.width / 2);
    y1 = Math.max(y1, b.y + b.height / 2);
  }
  if (x0 === Infinity) return null;
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}

/** The ids of `view`'s nodes within `hops` edges of `id` along the edges' direction, up (its
 * parents, theirs...) and down (its children...), `id` included, at most `limit` of them (the
 * nearest first): the part of a graph too large to draw whole that is drawn around a node. */
export function lineage(view, id, hops, limit = Infinity) {
  const up = new Map();
  const down = new Map();
  for (const e of view.edges) {
    if (!down.has(e.from)) down.set(e.from, []);
    if (!up.has(e.to)) up.set(e.to, []);
    down.get(e.from).push(e.to);
    up.get(e.to).push(e.from);
  }
  const seen = new Set([id]);
  // both directions a ring at a time, so that a cut at `limit` keeps what is nearest
  let rings = [[id], [id]];
  for (let k = 0; k < hops && seen.size < limit; k++) {
    rings = [up, down].map((near, side) => {
      const next = [];
      for (const v of rings[side]) {
        for (const w of near.get(v) || []) {
          if (seen.has(w) || seen.size >= limit) continue;
          seen.add(w);
          next.push(w);
        }
      }
      return next;
    });
  }
  return seen;
}
