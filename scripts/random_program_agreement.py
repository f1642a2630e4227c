"""Run many random programs (tests/test_random_programs.py) on nbgrad and PyTorch and count how
many agree in everything compared, with the first disagreement of each kind:

    python scripts/random_program_agreement.py 2000      # about 10 minutes
    python scripts/random_program_agreement.py 300 -v    # and print one example of each kind

The test suite runs 500 programs and fails on the first disagreement; this is the long version.
"""

import collections
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))

import test_random_programs  # noqa: E402
import torch  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 300
kinds = collections.Counter()
examples = {}
total = [0]


@settings(
    max_examples=COUNT,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
@given(data=st.data())
def run(data):
    total[0] += 1
    try:
        test_random_programs.test_random_programs_match_pytorch.hypothesis.inner_test(torch, data)
    except AssertionError as disagreement:
        kind = str(disagreement).split("\n")[0][:100]
        kinds[kind] += 1
        examples.setdefault(kind, str(disagreement)[:800])


run()
agreeing = total[0] - sum(kinds.values())
print(f"{total[0]} programs, {agreeing} agree ({100 * agreeing / total[0]:.1f}%)")
for kind, count in kinds.most_common(25):
    print(count, kind)
if "-v" in sys.argv:
    for example in examples.values():
        print("-----\n" + example)
