"""Random programs of everyday PyTorch calls agree with PyTorch at least as often as they did.

scripts/everyday_agreement.py draws programs of 2-5 calls from tests/everyday_calls.py (PyTorch's
everyday API, not nbgrad's) and compares everything a learner sees; a call nbgrad lacks counts as
a disagreement. This short run keeps the agreement rate from going down; the long run
(``--programs 2000``) writes docs/everyday-agreement.md.
"""

import importlib.util
import pathlib

import pytest

pytest.importorskip("torch")  # the comparison needs PyTorch

_SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "scripts" / "everyday_agreement.py"
_spec = importlib.util.spec_from_file_location("everyday_agreement", _SCRIPT)
everyday_agreement = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(everyday_agreement)

PROGRAMS = 150
# The rate measured on these 150 programs: it must only go up (raise it when you fix a cause).
# Issue 13's target is 98%.
# 145 / 150 since the list grew by torch.func's transforms and hvp (633 calls): the 150 programs
# drawn are others, with four of the known causes (oneDNN's workspace, eigvals, eigh) among them
# and one vmap whose result shows StackBackward0 (README: differences). On the list before, the
# same code agreed on 147 / 150.
FLOOR = 145 / 150
TARGET = 0.98


def test_everyday_programs_agree_at_least_as_often_as_before():
    agreeing, disagreements = everyday_agreement.measure(PROGRAMS)
    rate = agreeing / PROGRAMS
    summary = "\n".join(everyday_agreement.report(PROGRAMS, agreeing, disagreements, top=15))
    assert rate >= FLOOR, f"agreement fell below {FLOOR:.1%} (target {TARGET:.0%}):\n{summary}"


def test_a_missing_call_counts_as_a_disagreement(torch):
    """A call nbgrad lacks is reported by its name, not skipped."""
    error = everyday_agreement.Disagreement
    with pytest.raises(error) as raised:
        everyday_agreement.compare_errors(
            AttributeError("module 'nbgrad' has no attribute 'lgamma'"), None, "T.lgamma({0})"
        )
    assert raised.value.cause == "missing name: torch.lgamma"


def test_a_different_value_is_a_disagreement(torch):
    import nbgrad

    ours, theirs = nbgrad.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5])
    with pytest.raises(everyday_agreement.Disagreement) as raised:
        everyday_agreement.compare_results(ours, theirs, "x", [], True)
    assert raised.value.cause == "wrong value: x"
