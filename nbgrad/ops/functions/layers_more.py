"""Layer operations PyTorch exports at the top level too: ``channel_shuffle``."""

from nbgrad.autograd.dispatch import run_op
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.public import public


@public(function=True)
def channel_shuffle(input, groups):  # noqa: A002
    """(N, C, *): the channels, read as ``groups`` groups of C / groups, interleaved
    (ChannelShuffleBackward0)."""
    if input.dim() <= 2:
        raise RuntimeError(
            "channel_shuffle expects input with > 2 dims, but got input with sizes "
            f"[{', '.join(str(s) for s in input.shape)}]"
        )
    if groups <= 0:
        raise RuntimeError(
            f"Number of groups to divide channels in must be positive. Value of groups:{groups}"
        )
    channels = input.shape[1]
    if channels % groups:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {channels} channels and "
            f"{groups} groups."
        )
    return run_op(OPS["channel_shuffle"], (input,), (int(groups),))
