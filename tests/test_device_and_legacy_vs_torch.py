"""Devices, torch.cuda / accelerator / backends on a machine without GPUs, and the legacy
constructors: each expression evaluated with nbgrad and with PyTorch gives the same repr, or
the same exception type and message."""

import pickle
import warnings

import numpy as np
import pytest

import nbgrad

torch = pytest.importorskip("torch")  # the comparisons need PyTorch

DEVICES = [
    "torch.device('cpu')",
    "torch.device('cuda:0')",
    "torch.device('cpu', 0)",
    "torch.device('cuda', 1)",
    "torch.device(type='cuda', index=2)",
    "str(torch.device('cuda', 1))",
    "torch.device('cpu') == 'cpu'",
    "'cpu' == torch.device('cpu')",
    "torch.device('cpu') != 'cpu'",
    "torch.device('cpu') == torch.device('cpu', 0)",
    "torch.device('cuda') == torch.device('cuda')",
    "{torch.device('cpu'): 1}[torch.device('cpu')]",
    "torch.device(torch.device('cpu', 0))",
    "(torch.device('cuda:3').type, torch.device('cuda:3').index, torch.device('cpu').index)",
    "torch.device(0)",
    "torch.device('foo')",
    "torch.device('CPU')",
    "torch.device(' cpu')",
    "torch.device('cpu:-1')",
    "torch.device('cuda:x')",
    "torch.device('cuda:01')",
    "torch.device('cuda:1:2')",
    "torch.device('cpu', -1)",
    "torch.device('cuda:0', 1)",
    "torch.device('cpu', '0')",
    "torch.device(1.5)",
    "torch.device(None)",
    "torch.device()",
    "torch.device('cpu') < torch.device('cpu')",
    "torch.zeros(1).device",
    "(torch.zeros(1).is_cuda, torch.zeros(1).is_cpu, torch.zeros(1).get_device())",
    "torch.zeros(1, device='cpu:0').device",
    "torch.zeros(1).cuda()",
    "torch.zeros(2).cuda(0)",
    "torch.zeros(1).cpu()",
    "torch.zeros(1).pin_memory()",
    "torch.zeros(1).is_pinned()",
    "torch.zeros(1, device='cuda')",
    "torch.zeros(1, device=0)",
    "torch.zeros(1, device=torch.device('cpu'))",
    "torch.zeros(1, device='foo')",
    "torch.tensor([1.0], device='cuda')",
    "torch.randn(2, device='cuda')",
    "torch.ones(2, device='cuda')",
    "torch.full((2,), 1.0, device='cuda')",
    "torch.arange(3, device='cuda')",
    "torch.linspace(0, 1, 3, device='cuda')",
    "torch.eye(2, device='cuda')",
    "torch.zeros_like(torch.zeros(1), device='cuda')",
    "torch.zeros(1).to('cuda')",
    "torch.zeros(1).to('cuda:1')",
    "torch.zeros(1).to(torch.device('cuda'))",
    "torch.zeros(1).to(device='cuda')",
    "torch.zeros(1).to('foo')",
    "torch.zeros(1).to(3)",
    "torch.zeros(2).to('cpu', torch.float64)",
    "torch.zeros(2).to(torch.device('cpu'))",
    "torch.zeros(2).to('cuda', torch.float64)",
    "torch.nn.Linear(2, 2).to('cuda')",
    "torch.nn.Linear(2, 2).to(0)",
    "torch.nn.Linear(2, 2).cuda()",
    "torch.nn.Linear(2, 2).to('foo')",
    "torch.nn.Linear(1, 1).to(torch.device('cpu'))",
    "torch.nn.Linear(1, 1).to('cuda', torch.int64)",
    "torch.nn.Module().to('cuda')",
    "torch.nn.Module().cuda()",
    "torch.cuda.is_available()",
    "torch.cuda.device_count()",
    "torch.cuda.is_initialized()",
    "torch.cuda.max_memory_allocated()",
    "torch.cuda.memory_allocated()",
    "torch.cuda.memory_allocated(0)",
    "torch.cuda.memory_reserved()",
    "torch.cuda.max_memory_reserved()",
    "torch.cuda.empty_cache()",
    "torch.cuda.manual_seed(0)",
    "torch.cuda.manual_seed_all(0)",
    "torch.cuda.seed()",
    "torch.cuda.seed_all()",
    "torch.cuda.is_bf16_supported()",
    "torch.cuda.get_rng_state_all()",
    "torch.cuda.synchronize()",
    "torch.cuda.get_device_name()",
    "torch.cuda.get_device_name(0)",
    "torch.cuda.get_device_capability()",
    "torch.cuda.get_device_properties(0)",
    "torch.cuda.current_device()",
    "torch.cuda.get_rng_state()",
    "torch.cuda.init()",
    "torch.cuda.reset_peak_memory_stats()",
    "torch.cuda.set_device(0)",
    "torch.backends.mps.is_available()",
    "torch.backends.mps.is_built()",
    "torch.backends.mps.is_macos13_or_newer()",
    "torch.backends.cudnn.enabled",
    "torch.backends.cudnn.benchmark",
    "torch.backends.cudnn.deterministic",
    "torch.backends.cudnn.allow_tf32",
    "torch.backends.cudnn.is_available()",
    "torch.backends.cudnn.version()",
    "torch.backends.cuda.is_built()",
    "torch.backends.cuda.matmul.allow_tf32",
    "torch.accelerator.is_available()",
    "torch.accelerator.current_accelerator()",
    "torch.accelerator.device_count()",
    "torch.accelerator.current_device_index()",
    "torch.accelerator.synchronize()",
    "torch.get_default_device()",
    "torch.get_default_dtype()",
    "torch.set_default_dtype(torch.int64)",
]

LEGACY = [
    "Variable(torch.ones(2), requires_grad=True)",
    "Variable(torch.ones(2), True)",
    "Variable([1.0, 2.0])",
    "Variable()",
    "Variable(torch.ones(2, dtype=torch.int64), requires_grad=True)",
    "Variable(torch.ones(2), foo=1)",
    "isinstance(torch.ones(2), Variable)",
    "type(Variable(torch.ones(2))) is torch.Tensor",
    "Variable(torch.ones(2)) is torch.ones(2)",
    "torch.FloatTensor([1, 2])",
    "torch.FloatTensor(2, 3)",
    "torch.FloatTensor(torch.Size([2])).shape",
    "torch.FloatTensor()",
    "torch.FloatTensor(0)",
    "torch.FloatTensor(2, 0)",
    "torch.DoubleTensor([1, 2])",
    "torch.LongTensor([1.5, 2])",
    "torch.IntTensor([1, 2])",
    "torch.BoolTensor([1, 0])",
    "torch.ByteTensor([1, 0])",
    "torch.HalfTensor([1])",
    "torch.CharTensor([1])",
    "torch.ShortTensor([1])",
    "torch.LongTensor(3).dtype",
    "torch.FloatTensor(np.ones(2))",
    "torch.FloatTensor([1, 2], requires_grad=True)",
    "torch.FloatTensor(torch.Size([2]), requires_grad=True)",
    "torch.FloatTensor(2, dtype=torch.float64)",
    "torch.FloatTensor(torch.ones(2, dtype=torch.float64))",
    "torch.FloatTensor(torch.ones(2))",
    "torch.FloatTensor(2.5)",
    "torch.FloatTensor(True)",
    "torch.FloatTensor(-1)",
    "torch.FloatTensor('a')",
    "torch.FloatTensor([1], [2])",
    "torch.FloatTensor([[1, 2], [3]])",
    "torch.FloatTensor([1.0], device='cpu')",
    "torch.FloatTensor([1.0], device='cuda')",
    "isinstance(torch.ones(2), torch.FloatTensor)",
    "isinstance(torch.ones(2, dtype=torch.float64), torch.FloatTensor)",
    "isinstance(torch.ones(2, dtype=torch.float64), torch.DoubleTensor)",
    "isinstance(torch.tensor([1]), torch.LongTensor)",
    "isinstance(torch.nn.Parameter(torch.ones(1)), torch.FloatTensor)",
    "isinstance(torch.FloatTensor([1]), torch.Tensor)",
    "type(torch.FloatTensor([1])) is torch.Tensor",
    "issubclass(torch.FloatTensor, torch.Tensor)",
    "torch.FloatTensor.dtype",
    "(torch.FloatTensor.__module__, torch.FloatTensor.__name__)",
    "torch.FloatTensor.is_cuda",
    "torch.Tensor([1, 2])",
    "torch.Tensor(2, 3)",
    "torch.Tensor()",
    "torch.Tensor([True])",
    "torch.Tensor(torch.Size([2, 1])).shape",
    "torch.Tensor((2, 3))",
    "torch.Tensor(torch.ones(2, dtype=torch.int64))",
    "torch.Tensor(2.5)",
    "torch.Tensor([1], [2])",
    "torch.Tensor(2, requires_grad=True)",
    "torch.Tensor([1], device='cpu')",
    "torch.Tensor([1.0], device='cuda')",
    "torch.Tensor([1], dtype=torch.float64)",
    "y.new([1, 2])",
    "y.new(2, 3).shape",
    "y.new()",
    "y.new(torch.ones(2))",
    "y.new(torch.Size([2])).shape",
    "y.new([])",
    "torch.tensor([1, 2]).new([1.5])",
    "torch.ones(2, requires_grad=True).new([1.0])",
    "y.new_tensor([1, 2])",
    "y.new_tensor([1, 2], dtype=torch.int64)",
    "y.new_zeros(2, 3)",
    "y.new_zeros((2, 3)).shape",
    "y.new_ones(2, requires_grad=True)",
    "y.new_full((2,), 3)",
    "y.new_full((2,), 3, dtype=torch.int64)",
    "y.new_full((2,), 1.5, requires_grad=True)",
    "y.new_empty(2).shape",
    "y.new_empty((2,)).dtype",
    "y.new_empty(2, 3, dtype=torch.int64).shape",
    "y.new_zeros(2, device='cpu')",
    "y.new_zeros(2, device='cuda')",
    "y.type(torch.FloatTensor)",
    "y.type()",
    "y.type('torch.IntTensor')",
    "y.type('torch.FooTensor')",
    "y.type('torch.float64')",
    "y.type(int)",
    "y.type(torch.float32)",
    "y.type(dtype=torch.int64)",
    "y.type(torch.Tensor)",
    "y.type(torch.DoubleTensor) is y",
    "y.float().type()",
    "torch.tensor([1]).type()",
    "torch.tensor([True]).type()",
    "torch.ones(2, requires_grad=True).type(torch.DoubleTensor)",
]


def outcome(lib, expression):
    names = {
        "torch": lib,
        "np": np,
        "Variable": lib.autograd.Variable,
        "y": lib.ones(2, dtype=lib.float64),
    }
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            value = eval(expression, names)  # noqa: S307 - the expressions above
    except Exception as error:  # noqa: BLE001 - compared with PyTorch's
        return type(error).__name__, str(error)
    finally:
        lib.set_default_dtype(lib.float32)
    if isinstance(value, lib.Tensor) and expression.startswith(("torch.Tensor(2", "torch.Float")):
        value = value.shape if value.dim() == 2 else value  # uninitialised memory in PyTorch
    return "value", repr(value)


@pytest.mark.parametrize("expression", DEVICES + LEGACY)
def test_same_as_torch(expression):
    assert outcome(nbgrad, expression) == outcome(torch, expression)


def test_device_pickles_and_sets_default():
    dev = pickle.loads(pickle.dumps(nbgrad.device("cuda", 1)))
    assert dev == nbgrad.device("cuda:1") and isinstance(dev, nbgrad.device)
    for lib in (nbgrad, torch):
        lib.set_default_device("cuda")
        try:
            with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
                lib.zeros(1)
            with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
                lib.get_default_device()
            lib.set_default_device("cpu:0")
            assert repr(lib.get_default_device()) == "device(type='cpu', index=0)"
            assert repr(lib.zeros(1).device) == "device(type='cpu')"
        finally:
            lib.set_default_device(None)
        assert lib.get_default_device() == lib.device("cpu")
        with lib.device("cpu"):
            assert lib.zeros(1).device.type == "cpu"


def test_cudnn_flags_can_be_set():
    nbgrad.backends.cudnn.benchmark = True
    try:
        assert nbgrad.backends.cudnn.benchmark is True
    finally:
        nbgrad.backends.cudnn.benchmark = False


def test_variable_shares_data_and_is_a_leaf():
    for lib in (nbgrad, torch):
        x = lib.ones(2, requires_grad=True) * 2
        v = lib.autograd.Variable(x)
        assert v.grad_fn is None and not v.requires_grad
        with lib.no_grad():
            x.add_(1)
        assert v.tolist() == [3.0, 3.0]
        with pytest.warns(UserWarning, match="volatile was removed"):
            lib.autograd.Variable(x, volatile=True)
        with (
            pytest.raises(ValueError, match="can't be volatile and require_grad"),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore")
            lib.autograd.Variable(x, volatile=True, requires_grad=True)


def test_new_tensor_from_a_tensor_warns_as_torch():
    for lib in (nbgrad, torch):
        with pytest.warns(UserWarning, match=r"rather than tensor.new_tensor\(sourceTensor\)"):
            t = lib.ones(2).new_tensor(lib.ones(2, dtype=lib.float64))
        assert t.dtype is lib.float32
