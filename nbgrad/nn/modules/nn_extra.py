"""Modules of the "nn functions, more": MultiMarginLoss, MultiLabelMarginLoss, CTCLoss, RReLU,
EmbeddingBag, FractionalMaxPool2d and FractionalMaxPool3d."""

from nbgrad.nn import functional as F
from nbgrad.nn import init
from nbgrad.nn.modules.loss import _Loss, _WeightedLoss
from nbgrad.nn.modules.module import Module
from nbgrad.nn.parameter import Parameter
from nbgrad.ops import creation


class MultiMarginLoss(_WeightedLoss):
    def __init__(
        self, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"
    ):
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(
                f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.dim()}D "
                "instead"
            )
        self.p = p
        self.margin = margin

    def forward(self, input, target):
        return F.multi_margin_loss(
            input,
            target,
            p=self.p,
            margin=self.margin,
            weight=self.weight,
            reduction=self.reduction,
        )


class MultiLabelMarginLoss(_Loss):
    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class CTCLoss(_Loss):
    """The Connectionist Temporal Classification loss (see ``F.ctc_loss``)."""

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(
            log_probs,
            targets,
            input_lengths,
            target_lengths,
            self.blank,
            self.reduction,
            self.zero_infinity,
        )


class RReLU(Module):
    """Randomized leaky ReLU: random slopes for negative inputs while training, their mean in
    eval."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        inplace = ", inplace=True" if self.inplace else ""
        return f"lower={self.lower}, upper={self.upper}{inplace}"


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings, without making the embeddings themselves;
    the rows start standard normal, the padding row (if any) at zero."""

    def __init__(
        self,
        num_embeddings,
        embedding_dim,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        mode="mean",
        sparse=False,
        _weight=None,
        include_last_offset=False,
        padding_idx=None,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if padding_idx is not None:
            if padding_idx > 0 and padding_idx >= num_embeddings:
                raise AssertionError("padding_idx must be within num_embeddings")
            if padding_idx < 0:
                if padding_idx < -num_embeddings:
                    raise AssertionError("padding_idx must be within num_embeddings")
                padding_idx = num_embeddings + padding_idx
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(creation.empty(num_embeddings, embedding_dim, dtype=dtype))
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError(
                    "Shape of weight does not match num_embeddings and embedding_dim"
                )
            self.weight = Parameter(_weight)
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight._data[self.padding_idx] = 0

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(
            input,
            self.weight,
            offsets,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.mode,
            self.sparse,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    def extra_repr(self):
        text = f"{self.num_embeddings!r}, {self.embedding_dim!r}"
        if self.max_norm is not None:
            text += f", max_norm={self.max_norm!r}"
        if self.norm_type != 2:
            text += f", norm_type={self.norm_type!r}"
        if self.scale_grad_by_freq is not False:
            text += f", scale_grad_by_freq={self.scale_grad_by_freq!r}"
        text += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx!r}"
        return text


class _FractionalMaxPoolNd(Module):
    _dims = 2

    def __init__(
        self,
        kernel_size,
        output_size=None,
        output_ratio=None,
        return_indices=False,
        _random_samples=None,
    ):
        super().__init__()
        k = self._dims

        def expand(value):
            return tuple(value) if isinstance(value, (tuple, list)) else (value,) * k

        self.kernel_size = expand(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = expand(output_size) if output_size is not None else None
        self.output_ratio = expand(output_ratio) if output_ratio is not None else None
        name = type(self).__name__
        if output_size is None and output_ratio is None:
            raise ValueError(
                f"{name} requires specifying either an output size, or a pooling ratio"
            )
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        pool = F.fractional_max_pool2d if self._dims == 2 else F.fractional_max_pool3d
        return pool(
            input,
            self.kernel_size,
            self.output_size,
            self.output_ratio,
            self.return_indices,
            _random_samples=self._random_samples,
        )


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    _dims = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    _dims = 3
