// The order backward() would run a graph's nodes in, for a trace that recorded the forward pass
// only (a `%%autograd` cell without `backward()`, notebook 3): the timeline can still step
// through the backward pass, each step marked as predicted, with no gradient values.
//
// The order is the engine's (PyTorch's, which nbgrad follows): a node runs once every node that
// sends it a gradient has run; among the nodes ready to run, an AccumulateGrad first, then the
// node made last (the highest sequence number: here the order of the ops that made them), and
// among equals the one that became ready last.

/** Steps like the trace's `steps` records, with `predicted: true` and no gradients. */
export function predictedSteps(trace) {
  const nodes = trace.nodes || [];
  if (!nodes.length || (trace.steps || []).length) return [];
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const opOrder = new Map((trace.ops || []).map((op, i) => [op.id, i]));
  const priority = (node) => {
    if (node.variable) return Infinity;
    if (node.op && opOrder.has(node.op)) return opOrder.get(node.op);
    return -1 - nodes.length + nodes.indexOf(node); // made outside the recording: creation order unknown
  };
  // one backward pass per output the cell left (its grad_fn), else from every node nothing feeds
  const hasParent = new Set(nodes.flatMap((n) => (n.next || []).filter(Boolean).map((e) => e[0])));
  let roots = (trace.tensors || []).filter((t) => t.role === "output" && t.grad_fn && byId.has(t.grad_fn)).map((t) => t.grad_fn);
  if (!roots.length) roots = nodes.filter((n) => !hasParent.has(n.id)).map((n) => n.id);
  roots = [...new Set(roots)];

  const steps = [];
  roots.forEach((root, pass) => {
    // dependencies: how many edges reach each node from this root
    const reach = new Set([root]);
    const stack = [root];
    const deps = new Map();
    while (stack.length) {
      const node = byId.get(stack.pop());
      for (const edge of (node && node.next) || []) {
        if (!edge || !byId.has(edge[0])) continue;
        deps.set(edge[0], (deps.get(edge[0]) || 0) + 1);
        if (!reach.has(edge[0])) {
          reach.add(edge[0]);
          stack.push(edge[0]);
        }
      }
    }
    let ready = [{ id: root, order: 0 }];
    let pushed = 1;
    while (ready.length) {
      let best = 0;
      for (let i = 1; i < ready.length; i++) {
        const a = priority(byId.get(ready[i].id));
        const b = priority(byId.get(ready[best].id));
        if (a > b || (a === b && ready[i].order > ready[best].order)) best = i;
      }
      const { id } = ready[best];
      ready = ready.filter((_, i) => i !== best);
      const node = byId.get(id);
      steps.push({ pass, node: id, predicted: true, grads_in: [], grads_out: (node.next || []).map((e) => (e ? "predicted" : null)) });
      for (const edge of node.next || []) {
        if (!edge || !byId.has(edge[0])) continue;
        const left = deps.get(edge[0]) - 1;
        deps.set(edge[0], left);
        if (left === 0) ready.push({ id: edge[0], order: pushed++ });
      }
    }
  });
  return steps;
}
