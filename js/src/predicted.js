// The order backward() would run a graph's nodes in, for a trace that recorded the forward pass
// only (a `%%autograd` cell without `backward()`, notebook 3): the timeline can still step
// through the backward pass, each step marked as predicted, with no gradient values.
//
// The order is the engine's (PyTorch's, which nbgrad follows): a node runs once every node that
// sends it a gradient has run; among the nodes ready to run, an AccumulateGrad first, then the
// node made last (the highest sequence number: here the order of the ops that made them), and
// among equals (ready AccumulateGrads) the order PyTorch's binary heap gives them: the queue
// below is the one of nbgrad/autograd/ready_queue.py, which says why and how, step for step.

/** PyTorch's ready queue: a max-heap moved as C++'s std::push_heap and std::pop_heap move it. */
export class ReadyQueue {
  constructor(rank) {
    this.rank = rank; // node -> number: the higher runs first
    this.heap = [];
  }

  get size() {
    return this.heap.length;
  }

  push(node) {
    this.heap.push(node);
    this.moveUp(this.heap.length - 1, node);
  }

  pop() {
    const heap = this.heap;
    const last = heap.pop();
    if (!heap.length) return last;
    const top = heap[0];
    // the hole at the top walks down to a leaf, always into the higher child (the right one
    // among equals), and the last node fills it
    const size = heap.length;
    let hole = 0;
    let child = 0;
    while (child < Math.floor((size - 1) / 2)) {
      child = 2 * (child + 1);
      if (this.below(heap[child], heap[child - 1])) child -= 1;
      heap[hole] = heap[child];
      hole = child;
    }
    if (size % 2 === 0 && child === (size - 2) / 2) {
      child = 2 * (child + 1);
      heap[hole] = heap[child - 1];
      hole = child - 1;
    }
    this.moveUp(hole, last);
    return top;
  }

  below(a, b) {
    return this.rank(a) < this.rank(b);
  }

  moveUp(hole, node) {
    const heap = this.heap;
    let parent = Math.floor((hole - 1) / 2);
    while (hole > 0 && this.below(heap[parent], node)) {
      heap[hole] = heap[parent];
      hole = parent;
      parent = Math.floor((hole - 1) / 2);
    }
    heap[hole] = node;
  }
}

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
    const ready = new ReadyQueue((id) => priority(byId.get(id)));
    ready.push(root);
    while (ready.size) {
      const id = ready.pop();
      const node = byId.get(id);
      steps.push({ pass, node: id, predicted: true, grads_in: [], grads_out: (node.next || []).map((e) => (e ? "predicted" : null)) });
      for (const edge of node.next || []) {
        if (!edge || !byId.has(edge[0])) continue;
        const left = deps.get(edge[0]) - 1;
        deps.set(edge[0], left);
        if (left === 0) ready.push(edge[0]);
      }
    }
  });
  return steps;
}
