"""Write the graph widget's test fixtures (js/test/fixtures/*.json) from real recordings.

    python scripts/make_js_fixtures.py            # rewrites js/test/fixtures/
    python scripts/make_js_fixtures.py --into DIR

The JS tests read traces exactly as nbgrad writes them, so they cannot drift from Python:
tests/test_trace_schema.py runs this script and fails when a checked-in fixture differs from what
it writes today (re-run it and commit the fixtures after a change to what a trace holds). Each
fixture is one program below, recorded by ``nbgrad.record()`` in the ``"inline"`` form; its
``source.filename`` is this script's path in the repository, not the machine's.
"""

import argparse
import json
from pathlib import Path

import nbgrad as torch

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "js" / "test" / "fixtures"


def simple():
    """e = (a + b) * d, the README's example."""
    with torch.record() as trace:
        a = torch.tensor(2.0, requires_grad=True)
        b = torch.tensor(3.0, requires_grad=True)
        d = torch.tensor(4.0, requires_grad=True)
        c = a + b
        e = c * d
        e.backward()
    return trace


def four_weights():
    """Notebook 2's four-weight example: b = w1*a, c = w2*a, d = w3*b + w4*c, L = 10 - d."""
    with torch.record() as trace:
        a = torch.tensor(3.0)
        w1, w2, w3, w4 = (torch.tensor(v, requires_grad=True) for v in (2.0, 0.5, 1.5, -1.0))
        b = w1 * a
        c = w2 * a
        d = w3 * b + w4 * c
        L = 10 - d
        L.backward()
    return trace


def small_mlp():
    """A two-layer network's training step, in modules: matrices, modules and a summary."""
    torch.manual_seed(0)
    with torch.record() as trace:
        model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
        x = torch.linspace(-1, 1, 24).reshape(4, 6)
        target = torch.tensor([0, 2, 1, 0])
        loss = torch.nn.functional.cross_entropy(model(x), target)
        loss.backward()
    return trace


PROGRAMS = {"simple": simple, "four_weights": four_weights, "small_mlp": small_mlp}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--into", type=Path, default=FIXTURES)
    args = parser.parse_args()
    args.into.mkdir(parents=True, exist_ok=True)
    for name, program in PROGRAMS.items():
        data = program().to_dict()
        data["source"]["filename"] = str(Path(__file__).resolve().relative_to(ROOT))
        (args.into / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
