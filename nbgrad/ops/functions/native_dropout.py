"""``torch.native_dropout(input, p, train)``: the output and the boolean mask of the elements
kept, one table entry (NativeDropoutBackward0). ``F.dropout`` does not run it on the CPU
(PyTorch's CPU dropout multiplies by a mask, MulBackward0), only a direct call does."""

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.ops import creation
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.public import public
from nbgrad.random import rng_of


@public(function=True)
def native_dropout(input, p, train):  # noqa: A002
    if input.numel() == 0:  # ATen returns the input's values and an empty float "mask"
        output, _ = run_op(OPS["native_dropout"], (input,), (p, train, np.ones(0, bool)))
        return output, creation.empty(0, dtype=input.dtype)
    if train is not False:
        if not 0.0 <= 1.0 - p <= 1.0:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={1.0 - p}")
        if not input.is_floating_point():
            raise RuntimeError(
                "result type Float can't be cast to the desired output type "
                f"{dtypes.SCALAR_TYPE_NAMES[input._dtype]}"
            )
        keep = rng_of(None).random(tuple(input.shape)) < 1.0 - p
    else:
        keep = np.ones(tuple(input.shape), bool)
    return run_op(OPS["native_dropout"], (input,), (float(p), train, keep))
