"""The tensor operations users call (``nbgrad.exp``, ``x.sum(0)``, ``a @ b``), on top of the table.

Each function checks and normalises its arguments the way PyTorch does (dims, shapes, Python
numbers, error messages) and then runs one or a few entries of ``derivatives.OPS``. Where PyTorch
builds an operation from smaller ones (``matmul`` from ``mm``/``mv``/``bmm``, indexing from
``select``/``slice``/``index``), so do we, so that the graph shows the same nodes.

Each function declares its public names where it is defined (see ``ops/public.py``); this package
holds every function ``nbgrad`` exports under the same name (without ``out=``), so that the rest
of nbgrad can call ``functions.exp`` as users call ``nbgrad.exp``.
"""

from nbgrad.ops import public
from nbgrad.ops.functions import (  # importing each module declares its functions
    arithmetic,
    batch_norm_legit,
    comparison,
    convs,
    distances,
    einsum,
    elementwise,
    everyday,
    fake_quantize,
    finite_difference,
    float_parts,
    folding,
    grid_sample,
    histogram,
    indexing,
    inplace,
    inplace_views,
    layers_more,
    linalg,
    linalg_composites,
    linalg_decompositions,
    linalg_lstsq,
    linalg_lu,
    linalg_more,
    more_elementwise,
    native_dropout,
    nn_extra,
    quantile,
    reductions,
    reductions_more,
    reductions_special,
    renorm,
    sampling,
    scatter,
    scatter_reduce,
    scatter_views,
    segments,
    selection,
    shapes,
    shapes_more,
    special,
    unique,
    unsafe_indexing,
)
from nbgrad.ops.functions._common import _broadcast_error, to_dtype  # nn uses them
from nbgrad.ops.functions.reductions import vector_norm  # nbgrad.linalg.norm
from nbgrad.ops.functions.shapes import (  # backward formulas use them
    index_put_into_zeros,
    select_backward,
    slice_backward,
)

globals().update(public.FUNCTIONS)
