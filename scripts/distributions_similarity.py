"""How much of nbgrad/distributions reads like torch/distributions: for each of our files, the
difflib ratio against the torch file of the same name, and the share of our non-blank lines found
verbatim (stripped) in it, over all lines and over the lines that are not API declarations or
bare syntax (signatures, decorators, imports, `raise NotImplementedError`, class attributes the
API names, `try:` ...). Reads torch's files by script only.

    python scripts/distributions_similarity.py [-v]   (-v: list the verbatim lines)
"""

import difflib
import re
import sys
from pathlib import Path

import torch.distributions

OURS = Path(__file__).resolve().parent.parent / "nbgrad" / "distributions"
THEIRS = Path(torch.distributions.__file__).parent
NEAREST = {"location_scale.py": "normal.py"}  # a file of ours with no namesake in torch
SYNTAX = {"", ")", "]", "}", "),", "],", "else:", "pass", "try:", "):", "return (", "return {"}
API_ATTRIBUTE = re.compile(
    r"(has_rsample|has_enumerate_support|bijective|support|arg_constraints"
    r"|_mean_carrier_measure) = .*"
)


def is_trivial(line):
    return (
        line in SYNTAX
        or line.startswith(("@", "import ", "from ", "#", '"""', "__all__", "class "))
        or line.startswith(("super().__init__(", "raise ValueError(", "self,"))
        or line == "raise NotImplementedError"
        or re.fullmatch(r"def \w+\(.*\):", line) is not None
        or re.fullmatch(r"return [\w.]+", line) is not None
        or re.fullmatch(r'"\w+",', line) is not None  # a name in __all__
        or re.fullmatch(r'"\w+": constraints\.\w+(\(.*\))?,', line) is not None
        or API_ATTRIBUTE.fullmatch(line) is not None
    )


def main(verbose):
    total = verbatim_total = 0
    print(f"{'file':30}{'ratio':>7}{'verbatim':>10}{'lines':>7}{'verb. non-trivial':>19}")
    for path in sorted(OURS.glob("*.py")):
        ours = path.read_text().splitlines()
        theirs = (THEIRS / NEAREST.get(path.name, path.name)).read_text().splitlines()
        ratio = difflib.SequenceMatcher(None, ours, theirs).ratio()
        their_lines = {line.strip() for line in theirs}
        lines = [line.strip() for line in ours if line.strip()]
        same = [line for line in lines if line in their_lines]
        kept = [line for line in lines if not is_trivial(line)]
        same_kept = [line for line in kept if line in their_lines]
        total, verbatim_total = total + len(kept), verbatim_total + len(same_kept)
        share = len(same_kept) / max(len(kept), 1)
        print(
            f"{path.name:30}{ratio:7.3f}{len(same) / len(lines):10.1%}{len(lines):7d}"
            f"{share:12.1%} of {len(kept)}"
        )
        if verbose:
            for line in same_kept:
                print("    |", line)
    print(
        f"all files: {verbatim_total} of {total} non-trivial lines verbatim "
        f"({verbatim_total / total:.1%})"
    )


if __name__ == "__main__":
    main("-v" in sys.argv)
