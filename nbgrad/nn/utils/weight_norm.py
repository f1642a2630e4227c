"""``nn.utils.weight_norm`` / ``remove_weight_norm``: a weight recomputed as ``g * v / ||v||``
from two parameters before every forward (PyTorch's deprecated hook-based version)."""

import warnings

import nbgrad
from nbgrad.nn.parameter import Parameter


class WeightNorm:
    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return nbgrad._weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module, name, dim):
        warnings.warn(
            "`torch.nn.utils.weight_norm` is deprecated in favor of "
            "`torch.nn.utils.parametrizations.weight_norm`.",
            FutureWarning,
            stacklevel=3,
        )
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two weight_norm hooks on the same parameter {name}"
                )
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        # w = g * v / ||v||: g starts as the norms, v as the weight, so w is unchanged.
        module.register_parameter(
            name + "_g", Parameter(nbgrad.norm_except_dim(weight, 2, fn.dim).data)
        )
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
