"""``torch.autograd.graph``: the node base classes, and hooks on the tensors nodes save.

``saved_tensors_hooks(pack_hook, unpack_hook)`` decides how the tensors that operations save for
backward are kept: every tensor saved inside the block goes through ``pack_hook`` when it is saved,
and what that returns (any object) is kept instead; each time backward (or ``grad_fn._saved_*``)
reads it, ``unpack_hook`` turns it back into a tensor. The innermost block wins.
"""

from nbgrad.autograd.node import AccumulateGrad, Node, saved_tensors_hook_stack

__all__ = [
    "AccumulateGrad",
    "Node",
    "disable_saved_tensors_hooks",
    "save_on_cpu",
    "saved_tensors_hooks",
]

# Messages of the disable_saved_tensors_hooks blocks in force, the innermost last.
_disabled_messages = []


class saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Pack every tensor saved for backward inside the block with ``pack_hook``; unpack it with
    ``unpack_hook`` when it is read."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _disabled_messages:
            raise RuntimeError(_disabled_messages[-1])
        saved_tensors_hook_stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        saved_tensors_hook_stack.pop()


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - PyTorch's name
    """Keep saved tensors on the CPU. nbgrad's tensors always are: with ``pin_memory`` the saved
    value is a copy (as PyTorch's pinned buffer is), without it the tensor itself."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack_to_cpu(tensor):
            return (tensor.device, tensor.detach().clone() if pin_memory else tensor.cpu())

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


class disable_saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Refuse saved tensors hooks inside the block, with ``error_message``."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        if saved_tensors_hook_stack:
            raise RuntimeError(self.error_message)
        _disabled_messages.append(self.error_message)
        return self

    def __exit__(self, *exc):
        _disabled_messages.pop()
