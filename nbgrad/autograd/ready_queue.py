"""The engine's queue of nodes ready to run, ordered exactly as PyTorch's is.

PyTorch keeps ready nodes in a ``std::priority_queue`` keyed by sequence number: the node made
last runs first. Every ``AccumulateGrad`` has the same number (the largest), so which of several
ready leaves runs first is decided by how the C++ standard library's binary heap moves equal
elements, not by when they became ready: the five leaves of ``torch.stack([x0, ..., x4])`` get
their gradients in the order x0, x2, x4, x1, x3. Users see that order (in post-accumulate-grad
hooks, in the recorded backward steps), so this queue is that heap, step for step, as GCC's
libstdc++ (the library PyTorch's Linux builds use) implements ``push_heap`` and ``pop_heap``:

- push: put the new node at the end, then move it up past every parent that ranks strictly
  below it;
- pop: take the top; then walk the hole it leaves down to a leaf, always into the higher-ranked
  child (the right one when the two rank equal), and finally put the heap's last node into the
  hole and move it up as in push.

The widget predicts the same order for a graph that has not run backward yet
(js/src/predicted.js), and tests/test_ready_queue.py checks both against PyTorch.
"""


class ReadyQueue:
    __slots__ = ("_heap",)

    def __init__(self):
        self._heap = []

    def __len__(self):
        return len(self._heap)

    def push(self, node):
        heap = self._heap
        heap.append(node)
        _move_up(heap, len(heap) - 1, 0, node)

    def pop(self):
        heap = self._heap
        last = heap.pop()
        if not heap:
            return last
        top = heap[0]
        _fill_hole_from_top(heap, last)
        return top


def _ranks_below(a, b):
    """The heap's comparison: ``a`` runs after ``b`` (it was made earlier)."""
    return a._sequence_nr < b._sequence_nr


def _move_up(heap, hole, top, node):
    parent = (hole - 1) // 2
    while hole > top and _ranks_below(heap[parent], node):
        heap[hole] = heap[parent]
        hole = parent
        parent = (hole - 1) // 2
    heap[hole] = node


def _fill_hole_from_top(heap, last):
    """The hole at index 0 walks down to a leaf; ``last`` (taken off the end) fills it."""
    size = len(heap)
    hole = child = 0
    while child < (size - 1) // 2:
        child = 2 * (child + 1)  # the right child
        if _ranks_below(heap[child], heap[child - 1]):
            child -= 1
        heap[hole] = heap[child]
        hole = child
    if size % 2 == 0 and child == (size - 2) // 2:  # a last parent with a left child only
        child = 2 * (child + 1)
        heap[hole] = heap[child - 1]
        hole = child - 1
    _move_up(heap, hole, 0, last)
