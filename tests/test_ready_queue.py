"""The order the engine runs ready nodes in, against PyTorch: the newest node first, and ready
leaves (which share one sequence number) in the order PyTorch's heap gives them.

The order is what a learner sees in post-accumulate-grad hooks and in a recorded backward pass;
the widget predicts the same order for a graph that has not run backward (js/src/predicted.js,
whose tests replay the heap on the cases below)."""

import numpy as np
import pytest

import nbgrad
from nbgrad.autograd.ready_queue import ReadyQueue

torch = pytest.importorskip("torch")


def leaf_order(T, program, count):
    """The order in which ``count`` leaves get their .grad when ``program(T, leaves)`` runs."""
    order = []
    leaves = [T.tensor(float(i + 1), requires_grad=True) for i in range(count)]
    for i, leaf in enumerate(leaves):
        leaf.register_post_accumulate_grad_hook(lambda _, i=i: order.append(i))
    program(T, leaves).backward()
    return order


def stacked(T, leaves):
    return T.stack(leaves).sum()


def summed_in_a_chain(T, leaves):
    total = leaves[0] * 1
    for leaf in leaves[1:]:
        total = total + leaf
    return total


def each_used_twice(T, leaves):
    return (T.stack(leaves) * T.stack(leaves[::-1])).sum() + T.stack(leaves[:2]).sum()


def through_mixed_nodes(T, leaves):
    parts = [
        leaf.exp() if i % 3 == 0 else leaf * 2 if i % 3 == 1 else leaf
        for i, leaf in enumerate(leaves)
    ]
    return T.stack(parts).sum()


@pytest.mark.parametrize(
    "program", [stacked, summed_in_a_chain, each_used_twice, through_mixed_nodes]
)
@pytest.mark.parametrize("count", [1, 2, 3, 5, 8, 13, 21])
def test_leaves_get_their_grads_in_pytorchs_order(program, count):
    assert leaf_order(nbgrad, program, count) == leaf_order(torch, program, count)


def test_an_mlps_parameters_get_their_grads_in_pytorchs_order():
    def order_of(T):
        T.manual_seed(0)
        model = T.nn.Sequential(
            T.nn.Linear(3, 4), T.nn.Tanh(), T.nn.Linear(4, 4), T.nn.ReLU(), T.nn.Linear(4, 2)
        )
        names = []
        for name, p in model.named_parameters():
            p.register_post_accumulate_grad_hook(lambda _, name=name: names.append(name))
        x = T.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
        model(x).pow(2).sum().backward()
        return names

    assert order_of(nbgrad) == order_of(torch)


class Ranked:
    def __init__(self, label, rank):
        self.label, self._sequence_nr = label, rank


def test_the_queue_is_a_heap_newest_first_and_equals_in_heap_order():
    queue = ReadyQueue()
    for label, rank in [("a", 5), ("b", 9), ("c", 1), ("d", 9), ("e", 7), ("f", 9)]:
        queue.push(Ranked(label, rank))
    popped = [queue.pop() for _ in range(len(queue))]
    ranks = [node._sequence_nr for node in popped]
    assert ranks == sorted(ranks, reverse=True)
    # five equal leaves come out as PyTorch's (libstdc++'s) heap gives them, not first-in first-out
    queue = ReadyQueue()
    for i in range(5):
        queue.push(Ranked(i, 2**64 - 1))
    assert [queue.pop().label for _ in range(5)] == [0, 2, 4, 1, 3]
