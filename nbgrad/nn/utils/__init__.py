"""nbgrad.nn.utils: helpers around the layers (``rnn.pad_sequence``)."""

from nbgrad.nn.utils import rnn
from nbgrad.nn.utils.clip_grad import (  # noqa: E402
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from nbgrad.nn.utils.weight_norm import remove_weight_norm, weight_norm  # noqa: E402
