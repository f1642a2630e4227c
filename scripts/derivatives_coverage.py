"""Which of PyTorch's derivatives.yaml entries nbgrad has: writes docs/derivatives-coverage.md.

    python scripts/derivatives_coverage.py           # rewrite docs/derivatives-coverage.md
    python scripts/derivatives_coverage.py --check   # exit 1 if the checked-in file is stale

The entries come from docs/derivatives-yaml-entries.txt (their ``name:`` signatures, taken from
one PyTorch commit by scripts/extract_derivatives_entries.py). For each entry this script works
out the backward node class PyTorch generates for it (``PowBackward1``), then calls the entry

- covered         when nbgrad makes a node class of that name (a table entry's ``spec.node``);
- not applicable  when it cannot apply to nbgrad's dense CPU tensors of real dtypes, for the
                  reason given in NOT_APPLICABLE below (or PyTorch makes no node for it at all);
- missing         otherwise.
"""

import pathlib
import re
import sys
from collections import Counter

ROOT = pathlib.Path(__file__).resolve().parent.parent
ENTRIES = ROOT / "docs" / "derivatives-yaml-entries.txt"
OUTPUT = ROOT / "docs" / "derivatives-coverage.md"


# --- The entries ---------------------------------------------------------------------------------


class Entry:
    """One derivatives.yaml entry: ``pow.Scalar(Scalar self, Tensor exponent) -> Tensor``.

    name      ``pow.Scalar``: the op and its overload
    base      ``pow``: the op's name, as the node name is made from it
    keys      the dispatch keys PyTorch makes a node for, ``Default`` first: nodes for nested
              tensors (``AutogradNestedTensor``) have their own names; empty for no node
    nodes     the node class names, one per key (filled in by ``name_nodes``)
    """

    def __init__(self, line):
        signature, _, tag = line.partition(" | ")
        self.signature = signature.strip()
        self.name = self.signature[: self.signature.index("(")]
        self.base = self.name.split(".")[0]
        if tag == "no node":
            self.keys = []
        elif tag.startswith("nodes: "):
            self.keys = tag[len("nodes: ") :].split()
        else:
            assert not tag, f"unknown tag {tag!r} in {line!r}"
            self.keys = ["Default"]
        self.nodes = []

    @property
    def node(self):
        """The node made for ordinary (dense) tensors, or None."""
        return self.nodes[0] if self.keys[:1] == ["Default"] else None


def read_entries():
    """The source commit, and the entries in file order."""
    commit, entries = None, []
    for line in ENTRIES.read_text().splitlines():
        if line.startswith("# commit: "):
            commit = line[len("# commit: ") :].strip()
        elif line.strip() and not line.startswith("#"):
            entries.append(Entry(line))
    return commit, entries


# --- PyTorch's node names ------------------------------------------------------------------------
# torchgen (load_derivatives.py) names a node after the op: each ``_``-separated part of the base
# name through Python's str.title(), then "Backward", then how many entries with the same prefix
# came before it in the file. Only entries that make a node take a number. So pow.Tensor_Scalar,
# pow.Tensor_Tensor and pow.Scalar are PowBackward0, 1 and 2; clamp.Tensor comes before clamp, so
# clamp(Tensor, Scalar?, Scalar?) is ClampBackward1. What follows from the rule:
#   - str.title() capitalises after digits: log1p -> Log1PBackward0, conv_depthwise3d ->
#     ConvDepthwise3DBackward0, special_xlog1py -> SpecialXlog1PyBackward0;
#   - a leading or trailing "_" vanishes, so private and in-place entries share the public op's
#     numbering: _cdist_forward is CdistBackward0, bernoulli_.float is BernoulliBackward2;
#   - "ForwardBackward" becomes "Backward": nll_loss_forward -> NllLossBackward0;
#   - a node for another dispatch key appends the key before the number, and numbers apart:
#     sum.dim_IntList is SumBackward1, and SumBackwardAutogradNestedTensor1 for nested tensors.


def node_prefix(base):
    camel = "".join(part.title() for part in base.split("_"))
    return (camel + "Backward").replace("ForwardBackward", "Backward")


def name_nodes(entries):
    counter = Counter()
    for entry in entries:
        for key in entry.keys:
            prefix = node_prefix(entry.base) + ("" if key == "Default" else key)
            entry.nodes.append(f"{prefix}{counter[prefix]}")
            counter[prefix] += 1


# --- Entries that cannot apply to nbgrad ---------------------------------------------------------
# nbgrad's tensors are dense, strided, on the CPU, of dtypes bool, uint8, int8-64, float16-64.
# Each pattern matches the entry's ``name`` (``op.overload``) from its start; the first match wins.
# Whatever a dense CPU tensor of a real dtype can reach stays "missing", even when only a private
# function reaches it (fake_quantize_*, torch._grouped_mm).

NOT_APPLICABLE = [
    # Backends nbgrad does not have
    (r"_?cudnn_", "cuDNN kernel: NVIDIA GPUs only"),
    (r"miopen_", "MIOpen kernel: AMD GPUs (ROCm) only"),
    (r"_?mps_|_lstm_mps|lstm_mps_", "Apple MPS (Metal GPU) kernel"),
    (
        r"(mkldnn_linear|mkldnn_max_pool[23]d|mkldnn_adaptive_avg_pool2d|_mkldnn_reshape"
        r"|to_mkldnn)$",
        "takes or makes oneDNN's opaque tensor layout (x.to_mkldnn()), not strided tensors",
    ),
    (
        r"_fused_dropout$",
        "CUDA-only fused dropout; on the CPU dropout multiplies by a mask (MulBackward0)",
    ),
    (
        r"(_conv_depthwise2d|conv_depthwise3d)$",
        "CUDA-only depthwise convolution kernel (beneath ConvolutionBackward0)",
    ),
    (
        r"_thnn_fused_(lstm|gru)_cell$",
        "CUDA-only fused RNN cell; on the CPU LSTMCell and GRUCell record mm, sigmoid, tanh, ...",
    ),
    (
        r"(_scaled_dot_product_(efficient|flash|cudnn)_attention|_flash_attention_forward"
        r"|_efficient_attention_forward)$",
        "CUDA-only attention kernel; on the CPU scaled_dot_product_attention records"
        " ScaledDotProductFlashAttentionForCpuBackward0",
    ),
    (
        r"\w+_overrideable$",
        "entry point for out-of-tree device backends (PrivateUse1); built-in devices never"
        " dispatch to it",
    ),
    (r"_pin_memory$", "pinned (page-locked) memory only serves copies to CUDA"),
    (
        r"(slow_conv_transpose[23]d|_slow_conv2d_forward|_slow_conv2d_backward|slow_conv3d_forward"
        r"|slow_conv_dilated[23]d)(\.|$)",
        "CPU kernel beneath convolution: F.conv1d/2d/3d, F.conv_transpose*d and nn.Conv*"
        " record ConvolutionBackward0 for every dtype, stride, dilation and layout; only"
        " torch._C._nn.* (thnn_conv2d, slow_conv3d, ...) and torch.ops.aten.* record these",
    ),
    # Layouts nbgrad does not have
    (
        r"_?sparse|_to_sparse|_to_dense$|_coalesce$|values$|_indices$",
        "sparse tensors (COO, CSR, CSC, BSR, BSC); nbgrad's tensors are dense",
    ),
    (r"_nested|to_padded_tensor$", "nested (jagged) tensors"),
    # Complex numbers: nbgrad has no complex dtypes
    (r"_fft_", "FFT: its input or its result is complex; nbgrad has no complex dtypes"),
    (r"(view_as_real|view_as_complex|complex|polar)$", "makes or reads complex tensors"),
    (
        r"(_conj|_conj_physical|conj_physical_)$",
        "complex conjugation: on real tensors PyTorch returns the input (or a copy) without"
        " recording a node",
    ),
    (
        r"linalg_eig$",
        "its eigenvalues and eigenvectors are complex even for a real input (linalg_eigh, for"
        " symmetric matrices, is real)",
    ),
    # Where PyTorch itself records other nodes for dense CPU tensors (CompositeImplicitAutograd)
    (
        r"matmul$",
        "on dense tensors PyTorch decomposes matmul into mm, mv, bmm, dot (their nodes);"
        " MatmulBackward0 is made only for nested tensors",
    ),
    (
        r"chunk$",
        "on dense tensors chunk is split (SplitBackward0); ChunkBackward0 is made only for"
        " nested tensors",
    ),
    (
        r"linear$",
        "on dense CPU tensors linear decomposes into addmm or mm (AddmmBackward0, MmBackward0);"
        " LinearBackward0 is made only on MPS and for nested tensors",
    ),
    (r"linear_backward$", "the backward of LinearBackward0, made only on MPS and nested tensors"),
    (
        r"max_pool2d$",
        "on the CPU max_pool2d runs max_pool2d_with_indices (MaxPool2DWithIndicesBackward0);"
        " MaxPool2DBackward0 is made only on MPS",
    ),
    (r"max_pool2d_backward$", "the backward of MaxPool2DBackward0, made only on MPS"),
    (
        r"_fused_rms_norm$",
        "fused kernel for CUDA, MPS and XPU; on the CPU rms_norm records pow, mean, rsqrt, mul",
    ),
    (
        r"div\.Scalar_mode$",
        "Python's torch.div(x, 2, rounding_mode=...) wraps the number into a 0-dim tensor, so"
        " PyTorch records DivBackward2 (div.Tensor_mode); only C++ reaches DivBackward3",
    ),
    (
        r"norm\.(Scalar|ScalarOpt_dtype|ScalarOpt_dim_dtype)$",
        "Python's torch.norm and Tensor.norm call linalg.vector_norm"
        " (LinalgVectorNormBackward0), with dtype= too; only C++ callers reach these overloads",
    ),
    (
        r"unique_dim_consecutive$",
        "torch.unique_consecutive(x, dim=d) records UniqueConsecutiveBackward0 (ATen runs"
        " unique_dim_consecutive beneath it); only torch.ops.aten.unique_dim_consecutive records"
        " UniqueDimConsecutiveBackward0",
    ),
    (
        r"_embedding_bag_dense_backward$",
        "a gradient of F.embedding_bag's gradient records EmbeddingBagBackwardBackward0"
        " (_embedding_bag_backward runs the dense one beneath it); only"
        " torch.ops.aten._embedding_bag_dense_backward records EmbeddingBagDenseBackwardBackward0",
    ),
    # PyTorch's own machinery
    (
        r"_foreach_",
        "fused multi-tensor kernel (one op over a list of tensors), which optimizers call under"
        " no_grad; nbgrad's optimizers loop over parameters, and each tensor's op is the"
        " ordinary one",
    ),
    (r"lift(_fresh)?$", "marks a fresh tensor for functionalization (torch.compile tracing)"),
    (
        r"_reshape_copy$",
        "only torch.ops.aten._reshape_copy reaches it (no torch, Tensor or nn function is"
        " bound to it): torch.reshape records ViewBackward0, or CloneBackward0 and"
        " UnsafeViewBackward0, also under vmap; functionalize records ViewBackward0_copy",
    ),
    (r"_test_", "a test op for PyTorch's autograd code generator"),
    # Ops that only torch.ops.aten reaches (export and torch.compile traces call them): checked
    # on torch 2.13 over torch.*, Tensor.*, F.*, the nn modules and their create_graph backwards
    (
        r"_batch_norm_(with|no)_update$",
        "only torch.ops.aten reaches it (export traces); F.batch_norm, torch.batch_norm and the"
        " nn BatchNorm and InstanceNorm modules record NativeBatchNormBackward0",
    ),
    (
        r"batch_norm_backward$",
        "the backward of the aten-only BatchNormWithUpdateBackward0 and"
        " BatchNormNoUpdateBackward0; F.batch_norm's double backward records"
        " NativeBatchNormBackwardBackward0",
    ),
    (
        r"native_dropout_backward$",
        "only torch.ops.aten reaches it: torch.native_dropout's gradient under create_graph is"
        " the gradient times mask * scale (MulBackward0)",
    ),
    (
        r"rrelu_with_noise_functional$",
        "only torch.ops.aten reaches it (functionalized rrelu of torch.compile traces);"
        " F.rrelu and torch.rrelu record RreluWithNoiseBackward0",
    ),
]

NO_NODE = "no node: no input has a backward formula, so PyTorch records no grad_fn either"


def not_applicable(entry):
    """The reason this entry cannot apply to nbgrad, or None."""
    for pattern, reason in NOT_APPLICABLE:
        if re.match(pattern, entry.name):
            return reason
    if entry.node is None:
        return NO_NODE
    return None


# --- What nbgrad has -----------------------------------------------------------------------------


def nbgrad_nodes():
    """Every node class name nbgrad makes for table ops (AccumulateGrad, CopySlices and custom
    Functions' nodes are hand-written and have no derivatives.yaml entry)."""
    sys.path.insert(0, str(ROOT))
    from nbgrad.ops.derivatives import OPS

    return {spec.node for spec in OPS.values()}


def classify(entries, nodes):
    """(entry, status, detail) for each entry; status is covered / not applicable / missing."""
    rows = []
    for entry in entries:
        reason = not_applicable(entry)
        if entry.node is not None and entry.node in nodes:
            rows.append((entry, "covered", entry.node))
        elif reason is not None:
            rows.append((entry, "not applicable", reason))
        else:
            rows.append((entry, "missing", ""))
    return rows


# --- The page ------------------------------------------------------------------------------------


def render():
    commit, entries = read_entries()
    name_nodes(entries)
    rows = classify(entries, nbgrad_nodes())
    counts = Counter(status for _, status, _ in rows)
    applicable = counts["covered"] + counts["missing"]
    lines = [
        "# Coverage of PyTorch's derivatives.yaml",
        "",
        "Generated by `python scripts/derivatives_coverage.py` from"
        " `docs/derivatives-yaml-entries.txt`: do not edit by hand.",
        "",
        f"PyTorch commit `{commit}` has {len(entries)} entries in"
        " `tools/autograd/derivatives.yaml`, each an operation with its derivative formulas."
        " An entry is *covered* when nbgrad makes the backward node PyTorch makes for it (same"
        " class name), *not applicable* when it cannot apply to nbgrad's dense CPU tensors of"
        " real dtypes (the reason is given), and *missing* otherwise.",
        "",
        f"- covered: {counts['covered']}",
        f"- not applicable: {counts['not applicable']}",
        f"- missing: {counts['missing']}",
        f"- covered of applicable: {counts['covered']} / {applicable}"
        f" = {100 * counts['covered'] / applicable:.1f}%",
        "",
        "The node is the class PyTorch generates for dense tensors; an entry with formulas for"
        " nested tensors too has a second node, named after the first. *Covered* says that an"
        " entry of nbgrad's table (`nbgrad/ops/derivatives.py`) declares the node; that each"
        " call records the same nodes as PyTorch is what `tests/test_graph_vs_torch.py` checks.",
        "",
        "| entry | PyTorch node | status |",
        "|---|---|---|",
    ]
    for entry, status, detail in rows:
        node = " / ".join(f"`{name}`" for name in entry.nodes) or "none"
        if status == "covered":
            cell = f"covered: `{detail}`"
        elif status == "not applicable":
            cell = f"n/a: {detail}"
        else:
            cell = "**missing**"
        lines.append(f"| `{entry.signature}` | {node} | {cell} |")
    return "\n".join(lines) + "\n"


def main():
    text = render()
    if "--check" in sys.argv[1:]:
        if OUTPUT.read_text() != text:
            sys.exit(f"{OUTPUT} is stale: run python scripts/derivatives_coverage.py")
        return
    OUTPUT.write_text(text)
    print(text[: text.index("| entry")].strip())


if __name__ == "__main__":
    main()
