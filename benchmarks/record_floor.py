"""How close to the plain program any recorder built like nbgrad's can get (issue 16, item 4).

``record_scale.py`` measures what recording costs; this measures what parts of it cost at the
least, on the same four families, to tell what a faster recorder would have to give up. Each
family runs, in turns, five ways:

- ``plain``: the forward and backward pass, unrecorded;
- ``listening``: with a listener at each of the engine's four observation points that only
  appends its arguments to a list (what watching the engine costs, with nothing recorded);
- ``retaining``: the same, and ``retain_grad()`` on every op's result, as the recorder does so
  that every intermediate keeps its ``.grad`` (README: "as if ``c.retain_grad()`` had been
  called"); backward then also copies each such grad into its tensor;
- ``records``: the same, and per op and per backward step the objects the trace's API is made
  of, with no lookups: an ``OpRecord``, a ``TensorRecord`` with a snapshot of the result, a
  ``NodeRecord``, a weak reference, and per backward step a ``BackwardStep`` with a snapshot of
  each grad it received and sent;
- ``record()``: the real recorder.

Ratios are of minimums of this process's CPU time (``time.process_time``), ``gc`` on, every
sample ending with a full collection, as in ``record_scale.py``.

    python -m benchmarks.record_floor             # the four families at about 1,000 nodes
    python -m benchmarks.record_floor --sizes 10k
"""

import argparse
import gc
import time
import weakref

from benchmarks import harness
from benchmarks.record_scale import Case, _shell, cases
from nbgrad.autograd import observe
from nbgrad.trace.api import set_last_trace
from nbgrad.trace.trace import BackwardStep, NodeRecord, OpRecord, TensorRecord
from nbgrad.trace.values import Policy, snapshot

_LISTS = (
    observe.op_listeners,
    observe.node_listeners,
    observe.accumulate_listeners,
    observe.backward_listeners,
)


class _Watcher:
    """Listens at every observation point, doing as much as its ``level`` says."""

    def __init__(self, level):
        self.level = level  # "listening", "retaining" or "records"
        self.log = []
        self.policy = Policy()
        self.kept = []

    def on_op(self, node, name, inputs, outputs):
        self.log.append((node, name, inputs, outputs))
        if self.level == "listening":
            return
        for tensor in outputs:
            if node is not None and tensor.grad_fn is node:
                tensor.retain_grad()
        if self.level != "records":
            return
        op = OpRecord("o", name, list(inputs), [], None, None, None, None, None)
        for tensor in outputs:
            value = snapshot(tensor._data, self.policy)
            record = TensorRecord("t", value.shape, "float32", True, False, 0, value)
            op.outputs.append(record)
            self.kept.append((weakref.ref(tensor), record))
        if node is not None:
            op.node = NodeRecord("n", type(node).__name__)
        self.kept.append(op)

    def on_node(self, node, grads_in, grads_out):
        self.log.append((node, grads_in, grads_out))
        if self.level == "records":
            received = [None if g is None else snapshot(g, self.policy) for g in grads_in]
            sent = [None if g is None else snapshot(g, self.policy) for g in grads_out]
            self.kept.append(BackwardStep(0, 0, None, received, sent, False))

    def on_other(self, *args):
        self.log.append(args)

    def run(self, body):
        listeners = (self.on_op, self.on_node, self.on_other, self.on_other)
        for listeners_list, listener in zip(_LISTS, listeners):
            listeners_list.append(listener)
        try:
            body()
        finally:
            for listeners_list, listener in zip(_LISTS, listeners):
                listeners_list.remove(listener)


def _ways(case):
    ways = case.ways()
    plain = ways["plain"]

    def watched(level):
        return lambda: _Watcher(level).run(plain)

    return {
        "plain": plain,
        "listening": watched("listening"),
        "retaining": watched("retaining"),
        "records": watched("records"),
        "record()": ways["record()"],
    }


def measure(case, samples):
    ways = _ways(case)
    for way in ways.values():
        way()
    cpu = {name: [] for name in ways}
    for _ in range(samples):
        for name, way in ways.items():
            set_last_trace(None)
            gc.collect()
            gc.freeze()
            start = time.process_time()
            way()
            gc.collect()
            cpu[name].append(time.process_time() - start)
            gc.unfreeze()
    return {name: min(times) for name, times in cpu.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1k", help="comma-separated: 1k, 10k")
    parser.add_argument("--samples", type=int, default=7)
    args = parser.parse_args()
    shell = _shell()
    print("| program | ops | plain ms (CPU) | listening | retaining | records | record() |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    with harness.one_thread():
        for name, family, _, n in cases("", tuple(args.sizes.split(","))):
            case = Case(shell, family, n)
            _, ops = case.check()
            best = measure(case, args.samples)
            plain = best["plain"]
            ratios = " | ".join(
                f"{best[way] / plain:.2f}x"
                for way in ("listening", "retaining", "records", "record()")
            )
            print(f"| {name} | {ops:,} | {plain * 1e3:,.1f} | {ratios} |", flush=True)


if __name__ == "__main__":
    main()
