"""Channel-wise dropout (dropout1d/2d/3d) on every input rank PyTorch takes, and alpha dropout in
place, against PyTorch: the graph (unsqueeze and squeeze around an unbatched input, in place
too), whether the result is the input itself, the shape, the deprecation warnings and the errors.
The masks are random in both libraries, so values are compared by what they can be."""

import warnings

import numpy as np
import pytest
from graph_compare import structure

import nbgrad

CALLS = [
    ("F.dropout1d(x, 0.5)", (3, 4)),
    ("F.dropout1d(x, 0.5)", (2, 3, 4)),
    ("F.dropout1d(x, 0.5)", (4,)),
    ("F.dropout1d(x, 0.5)", (1, 2, 3, 4)),
    ("F.dropout2d(x, 0.5)", (3, 4, 5)),
    ("F.dropout2d(x, 0.5)", (2, 3, 4, 5)),
    ("F.dropout2d(x, 0.5)", (3, 4)),
    ("F.dropout2d(x, 0.5)", (1, 2, 3, 4, 5)),
    ("F.dropout2d(x, 0.5)", (4,)),
    ("F.dropout3d(x, 0.5)", (3, 4, 5, 6)),
    ("F.dropout3d(x, 0.5)", (2, 3, 4, 5, 6)),
    ("F.dropout3d(x, 0.5)", (3, 4, 5)),
    ("F.dropout3d(x, 0.5)", (3, 4)),
    ("F.dropout1d(x, 0.5, training=False)", (3, 4)),
    ("F.dropout1d(x, 0.0)", (3, 4)),
    ("F.dropout1d(x, 0.5)", (0, 4)),
    ("F.dropout3d(x, 0.5, training=False)", (1, 3, 4, 5)),
    ("F.dropout1d(y, 0.5, training=False, inplace=True)", (3, 4)),
    ("F.dropout1d(y, 0.5, inplace=True)", (3, 4)),
    ("F.dropout3d(y, 0.5, inplace=True)", (3, 4, 5, 6)),
    ("F.dropout1d(x, 0.0)", (2, 3, 4)),
    ("F.dropout1d(x, 1.0)", (2, 3, 4)),
    ("F.alpha_dropout(y, 0.5, True, inplace=True)", (3, 4)),
    ("F.feature_alpha_dropout(y, 0.5, True, inplace=True)", (2, 3, 4)),
    ("F.alpha_dropout(y, 0.5, False, inplace=True)", (3, 4)),
    ("T.nn.Dropout1d(0.5)(x)", (3, 4)),
    ("T.nn.Dropout2d(0.25)(x)", (2, 3, 4, 5)),
    ("T.nn.Dropout3d(inplace=True)(y)", (2, 3, 4, 5, 6)),
    ("T.nn.Dropout3d().eval()(x)", (3, 4, 5, 6)),
    ("T.nn.AlphaDropout(0.2)(x)", (3, 4)),
    ("T.nn.FeatureAlphaDropout(0.2)(x)", (2, 3, 4)),
    ("T.nn.AlphaDropout(0.2).eval()(x)", (3, 4)),
]


LAYERS = [
    "T.nn.Dropout1d(0.3)",
    "T.nn.Dropout2d()",
    "T.nn.Dropout3d(0.2, inplace=True)",
    "T.nn.AlphaDropout(0.1)",
    "T.nn.FeatureAlphaDropout(p=0.7)",
    "T.nn.Dropout2d(1.5)",
]


@pytest.mark.parametrize("layer", LAYERS)
def test_layers_print_and_refuse_as_pytorch(torch, layer):
    seen = []
    for T in (nbgrad, torch):
        try:
            made = eval(layer, {"T": T})  # noqa: S307 - the layers above
            seen.append((repr(made), made.p, made.inplace, made.training))
        except ValueError as error:
            seen.append(str(error))
    assert seen[0] == seen[1]


def _seen(T, call, shape):
    x = T.ones(*shape, requires_grad=True)
    y = x * 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r = eval(call, {"T": T, "F": T.nn.functional, "x": x, "y": y})  # noqa: S307
            seen = [tuple(r.shape), structure(r.grad_fn) if r.grad_fn else None, r is y]
        except RuntimeError as error:
            seen = ["RuntimeError", str(error)]
    return seen, [(w.category.__name__, str(w.message)) for w in caught]


@pytest.mark.parametrize(("call", "shape"), CALLS)
def test_as_pytorch(torch, call, shape):
    assert _seen(nbgrad, call, shape) == _seen(torch, call, shape)


def test_an_unbatched_input_loses_whole_channels():
    """dropout1d of a (C, L) input zeroes whole rows (its channels) and doubles the rest at
    p = 0.5; dropout3d of a (C, D, H, W) input, whole (D, H, W) blocks."""
    nbgrad.manual_seed(3)
    rows = nbgrad.nn.functional.dropout1d(nbgrad.ones(64, 5), 0.5).numpy()
    assert set(np.unique(rows)) == {0.0, 2.0}
    assert all(len(set(row)) == 1 for row in rows)
    blocks = nbgrad.nn.functional.dropout3d(nbgrad.ones(32, 2, 2, 2), 0.5).numpy()
    assert all(len(np.unique(block)) == 1 for block in blocks)
    assert 0 < (blocks[:, 0, 0, 0] == 0).sum() < 32
