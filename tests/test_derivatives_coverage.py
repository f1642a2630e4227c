"""docs/derivatives-coverage.md: up to date, complete, and named as PyTorch names its nodes."""

import importlib.util
import pathlib

import pytest

from nbgrad.autograd.node import HAND_WRITTEN_NODES
from nbgrad.ops.derivatives import OPS

ROOT = pathlib.Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location(
    "derivatives_coverage", ROOT / "scripts" / "derivatives_coverage.py"
)
coverage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(coverage)

# The ratchet: how many applicable entries nbgrad does not cover yet. Coverage can only grow:
# when you add an op, regenerate the page and lower this to the new count it prints.
MAX_MISSING = 0


@pytest.fixture(scope="module")
def entries():
    commit, entries = coverage.read_entries()
    coverage.name_nodes(entries)
    return entries


@pytest.fixture(scope="module")
def rows(entries):
    return coverage.classify(entries, coverage.nbgrad_nodes())


def test_checked_in_page_is_what_the_script_generates():
    assert coverage.OUTPUT.read_text() == coverage.render(), (
        "docs/derivatives-coverage.md is stale: run python scripts/derivatives_coverage.py"
    )


def test_every_entry_is_covered_explained_or_missing(entries, rows):
    assert len(entries) > 600  # the whole file was read
    assert len({entry.signature for entry in entries}) == len(entries)
    assert len(rows) == len(entries)
    for entry, status, detail in rows:
        assert status in ("covered", "not applicable", "missing"), entry.signature
        if status == "not applicable":
            assert detail, entry.signature
        if status == "missing":  # something nbgrad could make: a node for dense tensors
            assert entry.node is not None, entry.signature


def test_missing_entries_do_not_grow(rows):
    missing = [entry.name for entry, status, _ in rows if status == "missing"]
    assert len(missing) <= MAX_MISSING, (
        f"{len(missing)} derivatives.yaml entries are missing, more than MAX_MISSING ="
        f" {MAX_MISSING}: an op nbgrad covered lost its node name"
    )


def test_every_not_applicable_pattern_is_used(entries):
    """A pattern that matches nothing is stale (or misspelled)."""
    for pattern, reason in coverage.NOT_APPLICABLE:
        assert any(coverage.re.match(pattern, entry.name) for entry in entries), reason


def test_every_node_name_in_nbgrads_table_is_one_pytorch_makes(entries):
    """A table entry named wrongly (ClampBackward0 for clamp with numbers) would not count as
    covered; here it fails instead. CopySlices and CopyBackwards are written by hand in PyTorch
    too, and have no derivatives.yaml entry. PyTorch's generated ``*_copy`` variants of view ops
    (``torch.diag`` of a matrix runs diagonal_copy) name their node ``<view node>_copy``."""
    pytorch_nodes = {node for entry in entries for node in entry.nodes}
    pytorch_nodes |= {node + "_copy" for node in pytorch_nodes}
    table_nodes = {spec.node for spec in OPS.values()}
    assert table_nodes - pytorch_nodes <= HAND_WRITTEN_NODES


def test_the_naming_rule_on_known_names(entries):
    """Names read off real PyTorch 2.13 (``tensor.grad_fn.name()``), no PyTorch needed."""
    node = {entry.signature.split("(")[0]: entry.node for entry in entries}
    assert node["pow.Tensor_Scalar"] == "PowBackward0"
    assert node["pow.Tensor_Tensor"] == "PowBackward1"
    assert node["pow.Scalar"] == "PowBackward2"
    assert node["clamp.Tensor"] == "ClampBackward0"
    assert node["clamp"] == "ClampBackward1"  # clamp.Tensor comes first in the file
    assert node["log1p"] == "Log1PBackward0"  # str.title() capitalises after a digit
    assert node["_cdist_forward"] == "CdistBackward0"  # "_" and "Forward" vanish
    assert node["bernoulli_.float"] == "BernoulliBackward2"  # in-place shares the numbering
    assert node["nll_loss2d_forward"] == "NllLoss2DBackward0"
    assert node["eq.Scalar"] is None  # no backward formula: no node
    assert node["sum.dim_IntList"] == "SumBackward1"
    sum_dim = next(entry for entry in entries if entry.name == "sum.dim_IntList")
    assert sum_dim.nodes == ["SumBackward1", "SumBackwardAutogradNestedTensor1"]


def _pytorch_examples(torch):
    x = torch.rand(2, 3, requires_grad=True)
    image = torch.rand(1, 1, 4, 4, requires_grad=True)
    return {
        "pow.Tensor_Scalar": torch.pow(x, 2),
        "pow.Tensor_Tensor": torch.pow(x, x),
        "pow.Scalar": torch.pow(2, x),
        "clamp.Tensor": torch.clamp(x, torch.zeros(3), torch.ones(3)),
        "clamp": torch.clamp(x, 0.2, 0.8),
        "clamp_min.Tensor": torch.clamp_min(x, torch.zeros(3)),
        "log1p": torch.log1p(x),
        "_cdist_forward": torch.cdist(x, x),
        "bernoulli_.float": x.clone().bernoulli_(0.5),
        "squeeze_.dim": x.clone().unsqueeze(0).squeeze_(0),
        "rsub.Scalar": 1 - x,
        "sum.dim_IntList": x.sum(0),
        "fill_.Tensor": x.clone().fill_(torch.tensor(1.0)),
        "max_pool2d_with_indices": torch.nn.functional.max_pool2d(image, 2),
        "upsample_bilinear2d": torch.nn.functional.interpolate(
            image, scale_factor=2, mode="bilinear"
        ),
        "special_xlog1py": torch.special.xlog1py(x, x),
    }


def test_computed_names_match_real_pytorch(entries, torch):
    node = {entry.name: entry.node for entry in entries}
    for name, result in _pytorch_examples(torch).items():
        assert result.grad_fn.name() == node[name], name


def test_every_name_matches_torchgen(entries, torch):
    """All of them, as PyTorch's own code generator names them, when the installed PyTorch is the
    one the entries were taken from (torchgen ships with it)."""
    commit = coverage.read_entries()[0]
    if torch.version.git_version != commit:
        pytest.skip(f"the entries are from PyTorch {commit}, not the installed one")
    pytest.importorskip("yaml")
    torchgen = pytest.importorskip("torchgen")
    from torchgen.packaged.autograd.load_derivatives import load_derivatives

    packaged = pathlib.Path(torchgen.__file__).parent / "packaged"
    infos, _ = load_derivatives(
        str(packaged / "autograd" / "derivatives.yaml"),
        str(packaged / "ATen" / "native" / "native_functions.yaml"),
        str(packaged / "ATen" / "native" / "tags.yaml"),
    )
    # The file's entries come first, in file order; the {view}_copy entries torchgen derives
    # from view ops follow them.
    for entry, per_key in zip(entries, infos.values(), strict=False):
        expected = [info.op for info in per_key.values() if info.op is not None]
        assert entry.nodes == expected, entry.signature
