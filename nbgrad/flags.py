"""One switch for the engine's fast paths, so that a reader can run (and step through) the plain
path alone, and the test suite can check that both paths do the same.

    NBGRAD_FAST_PATHS=0 python my_program.py

With the variable set to ``0`` when nbgrad is imported, every operation takes the general path:
``run_op`` gathers its inputs with ``_gather`` (not the inline one- and two-input path), each
backward node runs through ``_run_node`` and its op's formulas through
``TableNode.apply_formulas`` (not the backward functions ``plain_backward`` writes out per op).
Results, graphs and errors are the same either way; only speed differs. ``scripts/test`` runs the
suite once with the fast paths off.
"""

import os

FAST_PATHS = os.environ.get("NBGRAD_FAST_PATHS", "1") != "0"
