"""Observation points: how a recorder watches the engine without the engine knowing about it.

Three moments are announced, each to a list of listeners:

- ``op``: an operation produced tensors: ``listener(node_or_None, name, inputs, outputs)``.
- ``node``: a node ran in backward: ``listener(node, grads_in, grads_out)``.
- ``accumulate``: a gradient was accumulated into a leaf: ``listener(leaf, grad, total)``.
- ``backward``: a backward pass starts and ends (the end also when it fails):
  ``listener(event, roots, retain_graph, create_graph, is_grad)`` with event "start" or "end",
  roots the ``(node, input_nr)`` edges it starts from, and is_grad True for ``autograd.grad``.

Two more say when an op or a node starts, for timing (the profiler): ``op_start``:
``listener(name)`` as a table op begins (the name its ``op`` announcement will carry), and
``node_start``: ``listener(node)`` as a node is about to run in backward.

Custom ``autograd.Function`` calls are announced as ops too, named after the class.

When nobody listens the lists are empty and the engine only pays an emptiness test.
"""

op_listeners = []
node_listeners = []
accumulate_listeners = []
backward_listeners = []
op_start_listeners = []
node_start_listeners = []
