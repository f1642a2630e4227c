"""``Optimizer``: parameter groups, per-parameter state, ``zero_grad``, ``state_dict``.

Subclasses implement ``step``. They update the parameters' memory directly, as PyTorch's
in-place updates do under ``no_grad``: no graph is recorded, and each parameter's version goes
up, so a graph that saved the old value refuses to run backward.
"""

import collections
import copy
import functools

from nbgrad.autograd import grad_mode
from nbgrad.autograd.tensor import Tensor


def _noting_calls(step):
    @functools.wraps(step)
    def noted_step(self, *args, **kwargs):
        self._opt_called = True
        return step(self, *args, **kwargs)

    return noted_step


class _Required:
    """The default of a hyper-parameter that has none (``lr`` of plain SGD in old PyTorch)."""

    def __repr__(self):
        return "<required parameter>"


required = _Required()


def bump_version(tensor, writes=1):
    """``tensor`` was written in place ``writes`` times: as many as the in-place ops PyTorch's
    single-tensor step runs on it (``exp_avg_sq.mul_(b).addcmul_(g, g)`` is two), so that
    versions, and the version numbers in PyTorch's "modified by an inplace operation" error,
    read the same."""
    tensor._version_counter.value += writes


class Optimizer:
    # Set by the first ``step()``: a learning-rate scheduler stepped before it warns, as in
    # PyTorch. Every subclass's ``step`` is wrapped to set it (``__init_subclass__``).
    _opt_called = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _noting_calls(cls.__dict__["step"])

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = collections.defaultdict(dict)
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {type(params).__name__}"
            )
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group):
        """Add a group of parameters with its own hyper-parameters (the defaults fill the rest)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for param in params:
            if not isinstance(param, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, but one of the params is "
                    f"{type(param).__name__}"
                )
            if not param.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = dict(param_group, params=params)
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(
                    f"parameter group didn't specify a value of required optimization parameter "
                    f"{name}"
                )
            group.setdefault(name, default)
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in existing for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        """Forget every parameter's ``.grad``: None by default (as PyTorch), or zeros."""
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                if set_to_none:
                    param.grad = None
                else:
                    from nbgrad.nn.modules.module import zero_grad_in_place

                    zero_grad_in_place(param)

    def step(self, closure=None):
        raise NotImplementedError

    def _run_closure(self, closure):
        if closure is None:
            return None
        with grad_mode.enable_grad():
            return closure()

    # --- state ------------------------------------------------------------------------------

    def state_dict(self):
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``, with each
        parameter named by its position across the groups, as PyTorch numbers them."""
        index_of, groups, next_index = {}, [], 0
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            indices = []
            for param in group["params"]:
                if id(param) not in index_of:
                    index_of[id(param)] = next_index
                    next_index += 1
                indices.append(index_of[id(param)])
            packed["params"] = indices
            groups.append(packed)
        state = {
            index_of[id(param)]: dict(values)
            for param, values in self.state.items()
            if id(param) in index_of
        }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, saved in zip(self.param_groups, groups):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError(
                    "loaded state dict contains a parameter group that doesn't match the size of "
                    "optimizer's group"
                )
        self.state = collections.defaultdict(dict)
        for mine, saved in zip(self.param_groups, groups):
            for param, index in zip(mine["params"], saved["params"]):
                if index in state_dict["state"]:
                    self.state[param] = {
                        key: _copied(value) for key, value in state_dict["state"][index].items()
                    }
            mine.update({k: v for k, v in saved.items() if k != "params"})

    def __repr__(self):
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}"
            for key in sorted(group):
                if key != "params":
                    text += f"\n    {key}: {group[key]}"
        return text + "\n)"


def _copied(value):
    if isinstance(value, Tensor):
        return Tensor._make(value._data.copy())
    return copy.deepcopy(value)
