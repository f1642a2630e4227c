"""Every error a learner can hit is PyTorch's: the same exception type and the same message.

Each case is a snippet run twice, with ``T`` bound to nbgrad and to PyTorch; the exception each
raises (type name and ``str(e)``) must be equal. A snippet that raises nothing in both is a
failure too: each case is here because PyTorch raises.
"""

import textwrap
import warnings

import numpy as np
import pytest

import nbgrad

CASES = {
    # --- backward twice, and saved tensors after they were freed ---------------------------------
    "backward twice": """
        a = T.tensor([1., 2.], requires_grad=True)
        y = (a * a).sum()
        y.backward()
        y.backward()
    """,
    "backward twice through a saved result": """
        a = T.tensor([1., 2.], requires_grad=True)
        y = a.exp().sum()
        y.backward()
        y.backward()
    """,
    # A Python number operand is saved as a wrapped tensor, and freed after backward as well
    "backward twice through a node that saved a number (mul)": """
        w = T.tensor([1., 2.], requires_grad=True)
        v = (w * -1).mean()
        v.backward()
        v.backward()
    """,
    "backward twice through a node that saved a number (div)": """
        w = T.tensor([1., 2.], requires_grad=True)
        v = (w / 2).sum()
        v.backward()
        v.backward()
    """,
    "saved number operand read after backward": """
        w = T.tensor([1., 2.], requires_grad=True)
        v = w * 3
        v.sum().backward()
        v.grad_fn._saved_other
    """,
    # floor_divide and a number % tensor have no derivative: a NotImplemented grad_fn
    "backward through floor_divide": """
        w = T.tensor([1.5, -2.5], requires_grad=True)
        y = w // 2
        assert y.requires_grad and y.grad_fn.name() == "torch::autograd::NotImplemented"
        assert type(y.grad_fn).__name__ == "NotImplemented"
        (y * w).sum().backward()
    """,
    "backward through a number % tensor": """
        w = T.tensor([1.5, -2.5], requires_grad=True)
        (2 % w).sum().backward()
    """,
    "autograd.grad twice": """
        a = T.tensor([1., 2.], requires_grad=True)
        y = (a * a).sum()
        T.autograd.grad(y, a)
        T.autograd.grad(y, a)
    """,
    "backward twice through a custom Function": """
        class Double(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2
            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return g * 2
        a = T.ones(2, requires_grad=True)
        y = Double.apply(a).sum()
        y.backward()
        y.backward()
    """,
    "_saved_self after backward": """
        a = T.tensor([1., 2.], requires_grad=True)
        y = a * a
        y.sum().backward()
        y.grad_fn._saved_self
    """,
    "_saved_result after backward": """
        a = T.tensor([1., 2.], requires_grad=True)
        y = a.exp()
        y.sum().backward()
        y.grad_fn._saved_result
    """,
    # --- what backward can be called on --------------------------------------------------------
    "implicit grad of a non-scalar": """
        a = T.tensor([1., 2.], requires_grad=True)
        (a * 2).backward()
    """,
    "autograd.grad of a non-scalar": """
        a = T.tensor([1., 2.], requires_grad=True)
        T.autograd.grad(a * 2, a)
    """,
    "backward of a tensor that does not require grad": """
        a = T.tensor([1., 2.])
        a.sum().backward()
    """,
    "backward of an integer tensor": "T.tensor([1, 2]).sum().backward()",
    "backward of a result computed under no_grad": """
        a = T.tensor([1., 2.], requires_grad=True)
        with T.no_grad():
            y = (a * 2).sum()
        y.backward()
    """,
    "autograd.grad with respect to a tensor not requiring grad": """
        a = T.tensor([1., 2.], requires_grad=True)
        b = T.tensor([1., 2.])
        T.autograd.grad((a * b).sum(), b)
    """,
    # --- requires_grad ----------------------------------------------------------------------------
    "tensor(ints, requires_grad=True)": "T.tensor([1, 2], requires_grad=True)",
    "tensor(bools, requires_grad=True)": "T.tensor([True], requires_grad=True)",
    "requires_grad = True on an integer tensor": """
        a = T.tensor([1, 2])
        a.requires_grad = True
    """,
    "zeros(int64, requires_grad=True)": "T.zeros(2, dtype=T.int64, requires_grad=True)",
    "ones(int32, requires_grad=True)": "T.ones(2, dtype=T.int32, requires_grad=True)",
    "arange(ints, requires_grad=True)": "T.arange(3, requires_grad=True)",
    "requires_grad = False on a non-leaf": """
        a = T.tensor([1., 2.], requires_grad=True)
        b = a * 2
        b.requires_grad = False
    """,
    "requires_grad_(False) on a non-leaf": """
        a = T.tensor([1., 2.], requires_grad=True)
        (a * 2).requires_grad_(False)
    """,
    "retain_grad on a tensor that does not require grad": "T.ones(2).retain_grad()",
    "register_hook on a tensor that does not require grad": "T.ones(2).register_hook(print)",
    "post-accumulate hook on a non-leaf": """
        a = T.ones(2, requires_grad=True)
        (a * 2).register_post_accumulate_grad_hook(print)
    """,
    # --- NumPy ------------------------------------------------------------------------------------
    ".numpy() on a leaf requiring grad": "T.tensor([1., 2.], requires_grad=True).numpy()",
    ".numpy() on a result": "(T.tensor([1., 2.], requires_grad=True) * 2).numpy()",
    "np.asarray of a tensor requiring grad": "np.asarray(T.tensor([1., 2.], requires_grad=True))",
    # --- matrix products --------------------------------------------------------------------------
    "mm shapes": "T.mm(T.ones(2, 3), T.ones(2, 3))",
    "mm of a vector": "T.mm(T.ones(3), T.ones(3, 2))",
    "mm with a vector": "T.mm(T.ones(2, 3), T.ones(3))",
    "mm float32 and float64": "T.mm(T.ones(2, 3), T.ones(3, 2, dtype=T.float64))",
    "mm float64 and float32": "T.mm(T.ones(2, 3, dtype=T.float64), T.ones(3, 2))",
    "mm int64 and float32": "T.mm(T.ones(2, 3, dtype=T.int64), T.ones(3, 2))",
    "mm float32 and float16": "T.mm(T.ones(2, 3), T.ones(3, 2, dtype=T.float16))",
    "mm shapes before dtypes": "T.mm(T.ones(2, 3), T.ones(4, 2, dtype=T.float64))",
    "matmul 2-D shapes": "T.ones(2, 3) @ T.ones(2, 3)",
    "matmul 1-D shapes": "T.ones(3) @ T.ones(4)",
    "matmul 2-D @ 1-D shapes": "T.ones(2, 3) @ T.ones(4)",
    "matmul 1-D @ 2-D shapes": "T.ones(3) @ T.ones(4, 2)",
    "matmul 3-D shapes": "T.ones(5, 2, 3) @ T.ones(5, 4, 2)",
    "matmul 3-D @ 2-D shapes": "T.ones(5, 2, 3) @ T.ones(4, 2)",
    "matmul 2-D @ 3-D shapes": "T.ones(2, 3) @ T.ones(5, 4, 2)",
    "matmul 3-D @ 1-D shapes": "T.ones(5, 2, 3) @ T.ones(4)",
    "matmul 1-D @ 3-D shapes": "T.ones(4) @ T.ones(5, 3, 2)",
    "matmul 1-D @ 4-D shapes": "T.ones(4) @ T.ones(2, 5, 3, 2)",
    "matmul 4-D @ 1-D shapes": "T.ones(2, 5, 2, 4) @ T.ones(3)",
    "matmul batch dims": "T.ones(5, 2, 3) @ T.ones(4, 3, 2)",
    "matmul batch dims, second of two": "T.ones(7, 5, 2, 3) @ T.ones(4, 3, 2)",
    "matmul of a 0-d tensor": "T.tensor(1.) @ T.ones(3)",
    "matmul 2-D float32 @ float64": "T.ones(2, 3) @ T.ones(3, 2, dtype=T.float64)",
    "matmul 2-D int64 @ float32": "T.ones(2, 3, dtype=T.int64) @ T.ones(3, 2)",
    "matmul 1-D float32 @ float64": "T.ones(3) @ T.ones(3, dtype=T.float64)",
    "matmul 2-D @ 1-D float32 @ float64": "T.ones(2, 3) @ T.ones(3, dtype=T.float64)",
    "matmul 1-D @ 2-D float32 @ float64": "T.ones(3) @ T.ones(3, 2, dtype=T.float64)",
    "matmul 3-D float64 @ float32": "T.ones(5, 2, 3, dtype=T.float64) @ T.ones(5, 3, 2)",
    "matmul 3-D @ 2-D float32 @ float64": "T.ones(5, 2, 3) @ T.ones(3, 2, dtype=T.float64)",
    "mv shapes": "T.mv(T.ones(2, 3), T.ones(4))",
    "mv of a matrix": "T.mv(T.ones(2, 3), T.ones(3, 1))",
    "mv of vectors": "T.mv(T.ones(3), T.ones(3))",
    "mv float64 and float32": "T.mv(T.ones(2, 3, dtype=T.float64), T.ones(3))",
    "dot shapes": "T.dot(T.ones(3), T.ones(4))",
    "dot of a matrix": "T.dot(T.ones(2, 3), T.ones(3))",
    "dot float32 and float64": "T.dot(T.ones(3), T.ones(3, dtype=T.float64))",
    "dot float32 and int64": "T.dot(T.ones(3), T.ones(3, dtype=T.int64))",
    "bmm shapes": "T.bmm(T.ones(5, 2, 3), T.ones(5, 4, 2))",
    "bmm batch": "T.bmm(T.ones(5, 2, 3), T.ones(4, 3, 2))",
    "bmm of a matrix": "T.bmm(T.ones(2, 3), T.ones(5, 3, 2))",
    "bmm with a matrix": "T.bmm(T.ones(5, 2, 3), T.ones(3, 2))",
    "bmm float64 and float32": "T.bmm(T.ones(1, 2, 3, dtype=T.float64), T.ones(1, 3, 2))",
    # --- broadcasting -----------------------------------------------------------------------------
    "add broadcast": "T.ones(2, 3) + T.ones(4)",
    "mul broadcast": "T.ones(2, 3) * T.ones(3, 2)",
    "sub broadcast 3-D": "T.ones(5, 2, 3) - T.ones(4, 1, 3)",
    "div broadcast": "T.ones(2, 3) / T.ones(2)",
    "pow broadcast": "T.ones(2, 3) ** T.ones(2)",
    "maximum broadcast": "T.maximum(T.ones(2, 3), T.ones(2))",
    "where broadcast": "T.where(T.ones(3) > 0, T.ones(3), T.ones(4))",
    "eq broadcast": "T.ones(2, 3) == T.ones(2)",
    "lt broadcast": "T.ones(2, 3) < T.ones(2)",
    "+= into a smaller tensor": """
        a = T.ones(3)
        a += T.ones(2, 3)
    """,
    "*= into a smaller tensor": """
        a = T.ones(3)
        a *= T.ones(2, 3)
    """,
    "add_ broadcast": """
        a = T.ones(3)
        a.add_(T.ones(2))
    """,
    "copy_ broadcast": """
        a = T.ones(3)
        a.copy_(T.ones(2))
    """,
    "copy_ into a smaller tensor": """
        a = T.ones(3)
        a.copy_(T.ones(2, 3))
    """,
    "masked_fill_ mask shape": """
        a = T.ones(3)
        a.masked_fill_(T.ones(2, dtype=T.bool), 1.)
    """,
    # --- the gradient passed to backward ----------------------------------------------------------
    "gradient of the wrong length": """
        a = T.tensor([1., 2.], requires_grad=True)
        (a * 2).backward(T.ones(3))
    """,
    "gradient of the wrong shape": """
        a = T.ones(2, 3, requires_grad=True)
        (a * 2).backward(T.ones(3, 2))
    """,
    "gradient of shape [1] for a scalar": """
        a = T.ones(2, requires_grad=True)
        (a * 2).sum().backward(T.ones(1))
    """,
    "autograd.grad grad_outputs of the wrong shape": """
        a = T.ones(2, 3, requires_grad=True)
        T.autograd.grad(a * 2, a, T.ones(3))
    """,
    # --- custom autograd.Function -----------------------------------------------------------------
    "Function returning too few grads": """
        class Mul(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y
            @staticmethod
            def backward(ctx, g):
                return g
        a = T.ones(2, requires_grad=True)
        Mul.apply(a, a).sum().backward()
    """,
    "Function returning too many grads": """
        class Double(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2
            @staticmethod
            def backward(ctx, g):
                return g, g
        a = T.ones(2, requires_grad=True)
        Double.apply(a).sum().backward()
    """,
    "Function returning a grad of the wrong length": """
        class Double(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2
            @staticmethod
            def backward(ctx, g):
                return T.ones(3)
        a = T.ones(2, requires_grad=True)
        Double.apply(a).sum().backward()
    """,
    "Function returning a grad of the wrong shape": """
        class Total(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.sum()
            @staticmethod
            def backward(ctx, g):
                return T.ones(2, 3)
        a = T.ones(3, 2, requires_grad=True)
        Total.apply(a).backward()
    """,
    "Function without forward": """
        class Nothing(T.autograd.Function):
            pass
        Nothing.apply(T.ones(2, requires_grad=True))
    """,
    "Function without backward": """
        class Double(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2
        a = T.ones(2, requires_grad=True)
        Double.apply(a).sum().backward()
    """,
    # --- autograd.grad and unused inputs ----------------------------------------------------------
    "autograd.grad with an unused input": """
        a = T.ones(2, requires_grad=True)
        b = T.ones(2, requires_grad=True)
        T.autograd.grad((a * 2).sum(), [a, b])
    """,
    "autograd.grad with allow_unused=True gives None": """
        a = T.ones(2, requires_grad=True)
        b = T.ones(2, requires_grad=True)
        result = T.autograd.grad((a * 2).sum(), [a, b], allow_unused=True)
        raise LookupError(repr(result))
    """,
    "autograd.grad with materialize_grads=True gives zeros": """
        a = T.ones(2, requires_grad=True)
        b = T.ones(2, requires_grad=True)
        result = T.autograd.grad((a * 2).sum(), [a, b], materialize_grads=True)
        raise LookupError(repr(result))
    """,
    "materialize_grads with allow_unused=False": """
        a = T.ones(2, requires_grad=True)
        T.autograd.grad((a * 2).sum(), [a], materialize_grads=True, allow_unused=False)
    """,
    # --- in-place operations on leaves ------------------------------------------------------------
    "add_ on a leaf requiring grad": """
        a = T.ones(2, requires_grad=True)
        a.add_(1)
    """,
    "+= on a leaf requiring grad": """
        a = T.ones(2, requires_grad=True)
        a += 1
    """,
    "*= on a leaf requiring grad": """
        a = T.ones(2, requires_grad=True)
        a *= 2
    """,
    "zero_ on a leaf requiring grad": """
        a = T.ones(2, requires_grad=True)
        a.zero_()
    """,
    "fill_ on a leaf requiring grad": """
        a = T.ones(2, requires_grad=True)
        a.fill_(1.)
    """,
    "copy_ into a leaf requiring grad": """
        a = T.ones(2, requires_grad=True)
        a.copy_(T.ones(2))
    """,
    "a[0] = v on a leaf requiring grad": """
        a = T.ones(2, requires_grad=True)
        a[0] = 5.
    """,
    "a[:] = v on a leaf requiring grad": """
        a = T.ones(2, requires_grad=True)
        a[:] = 5.
    """,
    "a[0:1] = v on a leaf requiring grad": """
        a = T.ones(2, requires_grad=True)
        a[0:1] = 5.
    """,
    "a[:, 0] = v on a leaf requiring grad": """
        a = T.ones(2, 3, requires_grad=True)
        a[:, 0] = 5.
    """,
    "a[[0]] = v on a leaf requiring grad": """
        a = T.ones(2, 3, requires_grad=True)
        a[[0]] = 5.
    """,
    "a[mask] = v on a leaf requiring grad": """
        a = T.ones(2, 3, requires_grad=True)
        a[a > 0] = 0.
    """,
    "in-place on a view of a leaf requiring grad": """
        a = T.ones(2, requires_grad=True)
        a[0].mul_(2)
    """,
    "in-place on a reshaped leaf requiring grad": """
        a = T.ones(2, 3, requires_grad=True)
        a.view(6).add_(1)
    """,
    "detach_ of a view": """
        a = T.ones(2, 3, requires_grad=True)
        b = a * 1
        b[0].detach_()
    """,
    # --- in-place modification of saved tensors (version counter) ---------------------------------
    "saved input modified (mul)": """
        a = T.ones(2, requires_grad=True)
        b = a * 1
        c = b * b
        b.add_(1)
        c.sum().backward()
    """,
    "saved input without history modified": """
        a = T.ones(2, requires_grad=True)
        w = T.ones(2)
        c = a * w
        w.add_(1)
        c.sum().backward()
    """,
    "saved leaf modified under no_grad": """
        a = T.ones(2, requires_grad=True)
        c = a * a
        with T.no_grad():
            a.add_(1)
        c.sum().backward()
    """,
    "saved input modified by item assignment": """
        a = T.ones(2, 3, requires_grad=True)
        b = a * 1
        c = b.pow(2)
        b[0] = 3.
        c.sum().backward()
    """,
    "saved input modified by relu_": """
        a = T.ones(2, 3, requires_grad=True)
        b = a * 1
        c = b.sin()
        b.relu_()
        c.sum().backward()
    """,
    "saved output modified (exp)": """
        a = T.ones(2, requires_grad=True)
        b = a.exp()
        b.add_(1)
        b.sum().backward()
    """,
    "saved output modified (sigmoid)": """
        a = T.ones(2, 3, requires_grad=True)
        b = a.sigmoid()
        b.mul_(2)
        b.sum().backward()
    """,
    "saved output modified, used elsewhere (tanh)": """
        a = T.ones(2, 3, requires_grad=True)
        b = a.tanh()
        c = b * 1
        b.mul_(2)
        c.sum().backward()
    """,
    # PyTorch names the forward op after its node: PowBackward1 -> Pow1, SinhBackward -> Sinh
    "saved output modified (pow with a tensor exponent)": """
        a = T.ones(2, requires_grad=True)
        b = a * 1
        c = b.pow(b)
        c.add_(1)
        c.sum().backward()
    """,
    "saved output modified (number ** tensor)": """
        a = T.ones(2, requires_grad=True)
        c = 2 ** a
        c.add_(1)
        c.sum().backward()
    """,
    "saved output modified (max)": """
        a = T.tensor([1., 2.], requires_grad=True)
        c = a.max()
        c.add_(1)
        c.backward()
    """,
    "saved output of a custom Function modified": """
        class Twice(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x * 2
                ctx.save_for_backward(y)
                return y
            @staticmethod
            def backward(ctx, g):
                y, = ctx.saved_tensors
                return g * y
        a = T.ones(2, requires_grad=True)
        y = Twice.apply(a)
        y.add_(1)
        y.sum().backward()
    """,
    "input saved by a custom Function modified": """
        class Square(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x
            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return 2 * g * x
        a = T.ones(2, requires_grad=True)
        b = a * 1
        y = Square.apply(b)
        b.add_(1)
        y.sum().backward()
    """,
    # --- shapes -----------------------------------------------------------------------------------
    "norm of a 0-d tensor over dim 1": "T.tensor(-1.18).norm(dim=1)",
    "select on a 0-d tensor": "T.tensor(1.5).select(0, 0)",
    "narrow on a 0-d tensor": "T.tensor(1.5).narrow(0, 0, 1)",
    "sum over a repeated dim": "T.ones(2, 3).sum((1, -1))",
    "norm over a repeated dim": "T.ones(2, 3).norm(dim=(0, 0))",
    "item assignment into a 0-d tensor that requires grad": """
        x = T.tensor(0.75, requires_grad=True)
        x[0] = 1.5
    """,
    "item assignment into a 0-d tensor": "T.tensor(0.75)[0] = 1.5",
    "slice assignment into a 0-d tensor": "T.tensor(0.75)[1:] = 1.5",
    "item assignment out of bounds": "T.ones(2)[5] = 1.5",
    "item assignment out of bounds in dim 1": "T.ones(2, 3)[..., 3] = 1.5",
    "item assignment with too many indices": "T.ones(2)[0, 1] = 1.5",
    "fill_ of an expanded tensor with a tensor value": """
        x = T.ones(1, 3)
        x.expand(2, 3).fill_(T.tensor(3.))
    """,
    "masked_fill with a mask that does not broadcast": (
        "T.ones(2, 3).masked_fill(T.ones(3, 2, dtype=T.bool), 0.)"
    ),
    "where with a condition that does not broadcast": (
        "T.where(T.ones(3, 2, dtype=T.bool), T.ones(2, 3), 0.)"
    ),
    "flatten of a 0-d tensor from dim 1": "T.tensor(1.5).flatten(1)",
    "item assignment of a value too short": "T.ones(2, 3)[0] = T.ones(2)",
    "slice assignment of a value too long": "T.ones(2, 3)[:, 0] = T.ones(3)",
    "item assignment of a value with more dims": "T.ones(2, 3)[0] = T.ones(2, 3)",
    "element assignment of a vector": "T.ones(2, 3)[0, 1] = T.ones(2)",
    "index assignment of a value that does not broadcast": (
        "T.ones(2, 3)[T.tensor([0, 1])] = T.ones(3, 3)"
    ),
    "mask assignment of too few values": """
        x = T.ones(2, 3)
        x[x > 0] = T.ones(2)
    """,
    "index assignment out of bounds": "T.ones(2, 3)[[0, 5]] = 1.",
    "index assignment out of bounds in dim 1": "T.ones(2, 3)[:, [0, 3]] = 1.",
    "index tensors that do not broadcast": "T.ones(5, 4)[T.arange(3), T.arange(2)]",
    "assignment of a string": "T.ones(2, 3)[0] = 'a'",
    "in-place clamp_ with a bound that does not broadcast": (
        "T.ones(2, 3).clamp_(min=T.ones(3, 1))"
    ),
    "in-place sqrt_ of an integer tensor": "T.ones(2, dtype=T.long).sqrt_()",
    "view to a wrong size": "T.ones(2, 3).view(4)",
    "view with -1 to a wrong size": "T.ones(2, 3).view(-1, 4)",
    "view with two -1": "T.ones(2, 3).view(-1, -1)",
    "view with -2": "T.ones(2).view(-1, -2)",
    "view of a transposed tensor": "T.ones(2, 3).t().view(6)",
    "reshape to a wrong size": "T.ones(2, 3).reshape(5)",
    "reshape with -1 to a wrong size": "T.ones(2, 3).reshape(4, -1)",
    "reshape with -2": "T.ones(2, 3).reshape(-2, 3)",
    "reshape of 0 elements with -1": "T.ones(0, 3).reshape(0, -1)",
    "view with 0 and -1": "T.ones(3).view(0, -1)",
    "expand to a wrong size": "T.ones(2, 3).expand(4, 3)",
    "expand to fewer dims": "T.ones(2, 3).expand(3)",
    "expand to a wrong size, last dims": "T.ones(2, 3).expand(2, 3, 4)",
    "expand with -1 in a new dim": "T.ones(2, 3).expand(-1, 2, 3)",
    "permute with too few dims": "T.ones(2, 3).permute(0)",
    "permute with a repeated dim": "T.ones(2, 3).permute(0, 0)",
    "t() of a 3-D tensor": "T.ones(2, 3, 4).t()",
    "flatten with start after end": "T.ones(2, 3, 4).flatten(2, 1)",
    "cat of different ranks": "T.cat([T.ones(2, 3), T.ones(3)])",
    "cat of different sizes": "T.cat([T.ones(2, 3), T.ones(2, 4)])",
    "cat of nothing": "T.cat([])",
    "cat of a 0-d tensor": "T.cat([T.ones(2, 3), T.tensor(1.)])",
    "stack of different sizes": "T.stack([T.ones(2, 3), T.ones(3, 2)])",
    "stack of nothing": "T.stack([])",
    "narrow past the end": "T.ones(2, 3).narrow(0, 1, 5)",
    "narrow with a bad start": "T.ones(2, 3).narrow(0, -3, 1)",
    "narrow with a negative length": "T.ones(2, 3).narrow(0, 0, -1)",
    # --- dims out of range ------------------------------------------------------------------------
    "sum over dim 2 of a matrix": "T.ones(2, 3).sum(2)",
    "sum over dim -3 of a matrix": "T.ones(2, 3).sum(-3)",
    "mean over dim 5": "T.ones(2, 3).mean(5)",
    "sum over dim 1 of a 0-d tensor": "T.tensor(1.).sum(1)",
    "unsqueeze(3) of a matrix": "T.ones(2, 3).unsqueeze(3)",
    "unsqueeze(-4) of a matrix": "T.ones(2, 3).unsqueeze(-4)",
    "softmax over dim 2": "T.ones(2, 3).softmax(2)",
    "transpose(0, 2) of a matrix": "T.ones(2, 3).transpose(0, 2)",
    "cat along dim 1 of vectors": "T.cat([T.ones(2), T.ones(2)], 1)",
    "stack along dim 2 of vectors": "T.stack([T.ones(2), T.ones(2)], dim=2)",
    "max over dim 2": "T.ones(2, 3).max(2)",
    "squeeze(3) of a matrix": "T.ones(2, 3).squeeze(3)",
    "argmax over dim 5": "T.ones(2, 3).argmax(5)",
    # --- indexing ---------------------------------------------------------------------------------
    "index past the end": "T.ones(3)[3]",
    "negative index past the start": "T.ones(3)[-4]",
    "second index past the end": "T.ones(2, 3)[0, 5]",
    "index past the end after :": "T.ones(2, 3)[:, 3]",
    "index past the end after None": "T.ones(2, 3, 4)[None, 0, 7]",
    "index past the end after ...": "T.ones(2, 3, 4)[..., 9]",
    "negative second index": "T.ones(2, 3)[1, -4]",
    "list index past the end": "T.ones(3)[[0, 5]]",
    "negative list index past the start": "T.ones(3)[[-4]]",
    "list index past the end after :": "T.ones(2, 3)[:, [0, 5]]",
    "list index past the end in 3-D": "T.ones(2, 3, 4)[:, :, [0, 9]]",
    "second list index past the end": "T.ones(2, 3, 4)[[0, 1], [0, 5]]",
    "int and list index past the end": "T.ones(2, 3)[[0, 1], 7]",
    "tensor index past the end": "T.ones(3)[T.tensor([0, 5])]",
    "0-d tensor index past the end": "T.ones(2, 3)[T.tensor(5)]",
    "too many indices": "T.ones(3)[0, 0]",
    "float index": "T.ones(3)[1.5]",
    "float tensor index": "T.ones(3)[T.tensor([1.])]",
    "0-d float tensor index": "T.ones(3)[T.tensor(1.)]",
    "mask of the wrong length": "T.ones(3)[T.tensor([True, False])]",
    "list mask of the wrong length": "T.ones(3)[[True, False]]",
    "mask of the wrong length after :": "T.ones(2, 3)[:, T.tensor([True, False])]",
    "mask of the wrong shape": "T.ones(2, 3, 4)[T.ones(2, 4, dtype=T.bool)]",
    "mask of the wrong length after an int": "T.ones(2, 3, 4)[0, :, T.tensor([True, False])]",
    "int index of a 0-d tensor": "T.tensor(1.)[0]",
    "slice of a 0-d tensor": "T.tensor(1.)[0:1]",
    "list index of a 0-d tensor": "T.tensor(1.)[[0]]",
    "negative slice step": "T.ones(3)[::-1]",
    "select past the end": "T.ones(2, 3).select(1, 3)",
    "select before the start": "T.ones(2, 3).select(0, -3)",
    "gather index past the end": "T.ones(2, 3).gather(1, T.tensor([[5]]))",
    "gather negative index": "T.ones(3).gather(0, T.tensor([-4]))",
    "gather with a float index": "T.ones(2, 3).gather(1, T.tensor([[0.]]))",
    "gather with an index of fewer dims": "T.ones(2, 3).gather(1, T.tensor([0, 1]))",
    "gather with a larger index": "T.ones(2, 3).gather(1, T.tensor([[0], [1], [2]]))",
    # --- numbers out of tensors -------------------------------------------------------------------
    ".item() of three elements": "T.ones(3).item()",
    ".item() of no elements": "T.ones(0).item()",
    "bool() of three elements": "bool(T.ones(3))",
    "bool() of no elements": "bool(T.ones(0))",
    "if on a tensor of two elements": """
        if T.ones(2) > 0:
            pass
    """,
    "len() of a 0-d tensor": "len(T.tensor(1.))",
    "iter() of a 0-d tensor": "iter(T.tensor(1.))",
    # --- dtypes -----------------------------------------------------------------------------------
    "mean of an integer tensor": "T.tensor([1, 2]).mean()",
    "max of an empty tensor": "T.ones(0).max()",
    "- of two bool tensors": "T.tensor([True]) - T.tensor([False])",
    "- of a bool tensor and a number": "T.tensor([True]) - 1",
    "number - bool tensor": "1 - T.tensor([True])",
    "sub_ of a bool": """
        a = T.tensor([1, 2])
        a -= True
    """,
    "unary - of a bool tensor": "-T.tensor([True])",
    "int ** negative int": "T.tensor([2]) ** -1",
    "bool ** bool tensors": "T.tensor([True]) ** T.tensor([True])",
    "int // 0": "T.tensor([1, 2]) // 0",
    "int % 0": "T.tensor([1, 2]) % 0",
    "float & float": "T.ones(2) & T.ones(2)",
    "+= float into an int tensor": """
        a = T.tensor([1, 2])
        a += 1.5
    """,
    "/= into an int tensor": """
        a = T.tensor([1, 2])
        a /= 2
    """,
    "mul_ float tensor into a bool tensor": """
        a = T.tensor([True])
        a.mul_(1.5)
    """,
    "where with a float condition": "T.where(T.ones(2), T.ones(2), T.zeros(2))",
    "where with an int64 condition": "T.where(T.ones(2, dtype=T.int64), T.ones(2), T.zeros(2))",
    "masked_fill with a float mask": "T.ones(2).masked_fill(T.ones(2), 0.)",
    "masked_fill with an int64 mask": "T.ones(2).masked_fill(T.ones(2, dtype=T.int64), 0.)",
    "maximum with a number": "T.maximum(T.ones(2), 0)",
    "maximum method with a number": "T.ones(2).maximum(0)",
    "minimum with a float": "T.ones(2).minimum(0.5)",
    "div with an unknown rounding mode": "T.tensor([1.]).div(2, rounding_mode='round')",
    "clamp without bounds": "T.ones(2).clamp()",
    # --- creating tensors -------------------------------------------------------------------------
    "ragged nested list": "T.tensor([[1, 2], [3]])",
    "ragged nested list, longer": "T.tensor([[1, 2], [3, 4, 5]])",
    "ragged nested list, deeper": "T.tensor([[[1], [2]], [[3], [4, 5]]])",
    "list mixing lists and numbers": "T.tensor([[1, 2], 3])",
    "tensor(None)": "T.tensor(None)",
    "tensor([None])": "T.tensor([None])",
    "tensor of a string": "T.tensor('abc')",
    "tensor of a dict": "T.tensor({1: 2})",
    "list of multi-element tensors": "T.tensor([T.ones(2), T.ones(2)])",
    "ones(-1)": "T.ones(-1)",
    "zeros(2, -1)": "T.zeros(2, -1)",
    "full((-1,), 2.)": "T.full((-1,), 2.)",
    "randn(2, -1)": "T.randn(2, -1)",
    "eye(-1)": "T.eye(-1)",
    "arange with step 0": "T.arange(0, 5, 0)",
    "arange with the wrong step sign": "T.arange(5, 0)",
    "arange to infinity": "T.arange(float('inf'))",
    "linspace with negative steps": "T.linspace(0, 1, -1)",
}

# Differences that were fixed in the engine's own files (nbgrad/autograd/tensor.py, node.py,
# function.py, api.py); each entry names where.
ENGINE_CASES = {
    "requires_grad_() on an integer tensor": (
        "T.tensor([1, 2]).requires_grad_()",
        "tensor.py: requires_grad_() says 'only Tensors of floating point dtype can require "
        "gradients' (the setter keeps '... floating point and complex dtype ...')",
    ),
    "_saved_self after an in-place change": (
        """
        a = T.ones(2, requires_grad=True)
        b = a * 1
        c = b * b
        b.add_(1)
        c.grad_fn._saved_self
        """,
        "node.py: reading a saved tensor checks its version, as backward does",
    ),
    "float() of three elements": (
        "float(T.ones(3))",
        "tensor.py: __float__/__int__ raise ValueError('only one element tensors can be "
        "converted to Python scalars')",
    ),
    "int() of three elements": (
        "int(T.ones(3))",
        "tensor.py: __float__/__int__ raise ValueError('only one element tensors can be "
        "converted to Python scalars')",
    ),
    ".grad = tensor of the wrong shape": (
        """
        a = T.ones(2, requires_grad=True)
        a.grad = T.ones(3)
        """,
        "tensor.py: the grad setter's messages",
    ),
    ".grad = tensor of the wrong dtype": (
        """
        a = T.ones(2, requires_grad=True)
        a.grad = T.ones(2, dtype=T.float64)
        """,
        "tensor.py: the grad setter's messages",
    ),
    "Function returning a number as a grad": (
        """
        class Double(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2
            @staticmethod
            def backward(ctx, g):
                return 1.0
        a = T.ones(2, requires_grad=True)
        Double.apply(a).sum().backward()
        """,
        "function.py: RuntimeError('expected Variable or None (got float)')",
    ),
    "backward(inputs=[])": (
        """
        a = T.ones(2, requires_grad=True)
        (a * 2).sum().backward(inputs=[])
        """,
        "api.py: the message is '`inputs` argument to `backward()` cannot be empty.'",
    ),
}


# --- element-wise functions, more: dtypes, arguments, dims ---------------------------------------
F_ = "T.nn.functional."
CASES.update(
    {
        "softplus of integers": F_ + "softplus(T.tensor([1, 2]))",
        "logsigmoid of integers": F_ + "logsigmoid(T.tensor([1, 2]))",
        "silu of bools": F_ + "silu(T.tensor([True]))",
        "elu of integers": F_ + "elu(T.tensor([1, 2]))",
        "selu of integers": "T.selu(T.tensor([1, 2]))",
        "celu with alpha 0": F_ + "celu(T.tensor([1.0, 2.0]), 0.0)",
        "mish of integers": F_ + "mish(T.tensor([1, 2]))",
        "hardswish of integers": F_ + "hardswish(T.tensor([1, 2]))",
        "hardsigmoid of integers": F_ + "hardsigmoid(T.tensor([1, 2]))",
        "softshrink of integers": F_ + "softshrink(T.tensor([1, 2]))",
        "softshrink with a negative lambda": F_ + "softshrink(T.tensor([1.0, 2.0]), -1)",
        "hardshrink of integers": "T.hardshrink(T.tensor([1, 2]))",
        "hardtanh with min above max": F_ + "hardtanh(T.tensor([1.0]), 2.0, 1.0)",
        "relu6 of bools": F_ + "relu6(T.tensor([True]))",
        "logsumexp dim out of range": "T.logsumexp(T.ones(2, 3), 2)",
        "logsumexp repeated dim": "T.ones(2, 3).logsumexp((1, -1))",
        "logsumexp over no dims": "T.ones(2, 3).logsumexp(())",
        "atan2 with a number": "T.atan2(T.ones(2), 2.0)",
        "arctan2 method with a number": "T.ones(2).arctan2(2.0)",
        "atan2 shapes": "T.atan2(T.ones(2), T.ones(3))",
        "asin_ of integers": "T.tensor([0, 1]).asin_()",
        "exp_ of integers": "T.tensor([0, 1]).exp_()",
        "hypot of integers": "T.hypot(T.tensor([1, 2]), T.tensor([1, 2]))",
        "hypot with a number": "T.hypot(T.ones(2), 2.0)",
        "logaddexp method with a number": "T.ones(2).logaddexp(1.0)",
        "logaddexp of integers": "T.logaddexp(T.tensor([1, 2]), T.tensor([1, 2]))",
        "lerp to a number": "T.lerp(T.ones(2), 2.0, 0.5)",
        "lerp of another dtype": "T.lerp(T.ones(2), T.ones(2, dtype=T.float64), 0.5)",
        "lerp weight of integers": "T.lerp(T.ones(2), T.ones(2), T.tensor([1, 0]))",
        "lerp of integers": "T.lerp(T.tensor([1, 2]), T.tensor([1, 2]), 0.5)",
        "addcdiv of integers": "T.addcdiv(T.ones(2), T.tensor([1, 2]), T.tensor([1, 2]))",
        "addcmul value": "T.addcmul(T.ones(2), T.ones(2), T.ones(2), value=T.ones(2))",
        "addcmul shapes": "T.addcmul(T.ones(2), T.ones(3), T.ones(2))",
        "frac of integers": "T.frac(T.tensor([1, 2]))",
        "float_power_ of a float tensor": "T.ones(2).float_power_(2)",
        "pow_ of integers to a float": "T.tensor([1, 2]).pow_(0.5)",
        "pow_ of integers to a negative power": "T.tensor([1, 2]).pow_(-1)",
        "xlogy_ broadcasting the target": "T.ones(2).xlogy_(T.ones(3, 2))",
        "soft_margin_loss target requiring grad": F_
        + "soft_margin_loss(T.ones(2), T.ones(2, requires_grad=True))",
        "smooth_l1_loss negative beta": F_ + "smooth_l1_loss(T.ones(2), T.ones(2), beta=-1.0)",
        "huber_loss zero delta": F_ + "huber_loss(T.ones(2), T.ones(2), delta=0.0)",
        "huber_loss weight size": F_ + "huber_loss(T.ones(2), T.ones(2), weight=T.ones(3))",
        "gaussian_nll_loss negative var": F_
        + "gaussian_nll_loss(T.ones(2), T.ones(2), -T.ones(2))",
        "gaussian_nll_loss var size": F_
        + "gaussian_nll_loss(T.ones(2, 3), T.ones(2, 3), T.ones(3))",
        "poisson_nll_loss reduction": F_ + "poisson_nll_loss(T.ones(2), T.ones(2), reduction='x')",
        "kl_div reduction": F_ + "kl_div(T.ones(2), T.ones(2), reduction='x')",
        "margin_ranking_loss dims": F_ + "margin_ranking_loss(T.ones(2), T.ones(2), T.ones(1, 2))",
        "cosine_embedding_loss target dims": F_
        + "cosine_embedding_loss(T.ones(2, 2, 3), T.ones(2, 2, 3), T.ones(2))",
        "cosine_embedding_loss 0-d target": F_
        + "cosine_embedding_loss(T.ones(2, 3), T.ones(2, 3), T.ones(()))",
        "cosine_embedding_loss 2-d target": F_
        + "cosine_embedding_loss(T.ones(2, 3), T.ones(2, 3), T.ones(2, 3))",
        "triplet_margin_loss margin": F_
        + "triplet_margin_loss(T.ones(2), T.ones(2), T.ones(2), 0)",
        "triplet_margin_loss dims": F_ + "triplet_margin_loss(T.ones(2), T.ones(2), T.ones(1, 2))",
        "TripletMarginLoss margin": "T.nn.TripletMarginLoss(margin=-1.0)",
        "atanh_ backward": """
            a = T.tensor([0.1, 0.2], requires_grad=True)
            y = T.arctanh_(a * 1)
            assert type(y.grad_fn).__name__ == "AtanhBackward1"
            y.sum().backward()
        """,
        "asinh_ backward": "(T.tensor([0.1], requires_grad=True) * 1).asinh_().sum().backward()",
        "acosh_ backward": "(T.tensor([1.5], requires_grad=True) * 1).arccosh_().sum().backward()",
        "smooth_l1_loss of integers": F_ + "smooth_l1_loss(T.tensor([1, 2]), T.tensor([1, 3]))",
        "huber_loss of integers": F_ + "huber_loss(T.tensor([1, 2]), T.tensor([1, 3]))",
        "soft_margin_loss of integers": F_ + "soft_margin_loss(T.tensor([1, 2]), T.ones(2))",
        "kl_div of an integer target": F_ + "kl_div(T.ones(2), T.tensor([1, 2]), reduction='sum')",
        "glu odd size": F_ + "glu(T.ones(3, 5))",
        "glu of a scalar": F_ + "glu(T.tensor(1.0))",
        "glu of integers": F_ + "glu(T.tensor([1, 2]))",
        "glu dim": F_ + "glu(T.ones(4), 5)",
        "prelu channels": F_ + "prelu(T.ones(4, 6), T.ones(3))",
        "prelu dtypes": F_ + "prelu(T.ones(4, 6), T.ones(6, dtype=T.float64))",
        "elu in place with a negative alpha, backward": """
            a = T.tensor([1.0, -2.0], requires_grad=True)
            T.nn.functional.elu(a * 1, -1.0, inplace=True).sum().backward()
        """,
    }
)


def run(T, code):
    """The (type name, message) of what ``code`` raises with ``T`` as the library, or None."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(textwrap.dedent(code), {"T": T, "np": np})  # noqa: S102 - our own test table
        except Exception as error:  # noqa: BLE001 - the exception is what is compared
            return type(error).__name__, str(error)
    return None


def assert_same_error(torch, code):
    real = run(torch, code)
    assert real is not None, "PyTorch raises nothing here: not an error case"
    assert run(nbgrad, code) == real


@pytest.mark.parametrize("name", list(CASES))
def test_error_matches_pytorch(torch, name):
    assert_same_error(torch, CASES[name])


@pytest.mark.parametrize(
    "name",
    list(ENGINE_CASES),
)
def test_error_matches_pytorch_engine_owned(torch, name):
    assert_same_error(torch, ENGINE_CASES[name][0])


def _warnings_of(T, code):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(textwrap.dedent(code), {"T": T})  # noqa: S102 - our own test table
    return [(w.category, str(w.message)) for w in caught]


def test_grad_of_a_non_leaf_warns_like_pytorch(torch):
    code = """
        a = T.ones(2, requires_grad=True)
        b = a * 2
        b.grad
    """
    (mine,) = _warnings_of(nbgrad, code)
    (real,) = _warnings_of(torch, code)
    assert mine[0] is UserWarning and real[0] is UserWarning
    # PyTorch appends where its C++ raised the warning, "(Triggered internally at
    # /__w/pytorch/.../TensorBody.h:493.)": a path of PyTorch's build machine, not reproducible.
    suffix = real[1][len(mine[1]) :]
    assert real[1].startswith(mine[1])
    assert suffix.startswith(" (Triggered internally at ")
    assert mine[1].startswith("The .grad attribute of a Tensor that is not a leaf Tensor")


def test_no_warning_for_grad_of_a_leaf_or_a_retained_non_leaf(torch):
    code = """
        a = T.ones(2, requires_grad=True)
        b = a * 2
        b.retain_grad()
        b.sum().backward()
        a.grad, b.grad
    """
    assert _warnings_of(nbgrad, code) == _warnings_of(torch, code) == []


def test_tensor_of_a_tensor_warns_like_pytorch(torch):
    code = "T.tensor(T.ones(2))"
    assert _warnings_of(nbgrad, code) == _warnings_of(torch, code)
    assert len(_warnings_of(nbgrad, code)) == 1


def test_vector_norm_of_an_integer_tensor_matches_pytorch(torch):
    assert_same_error(torch, "T.linalg.vector_norm(T.tensor([1, 2]))")


def test_norms_nbgrad_lacks_say_so():
    with pytest.raises(NotImplementedError, match="no nuclear norm"):
        nbgrad.ones(2, 3).norm("nuc")


def test_transpose_property_warns_like_pytorch(torch, monkeypatch):
    """x.T on a 0-d tensor or one of more than 2 dims is deprecated: PyTorch warns once per
    process (its message then says where its C++ warned: left out, as above)."""
    from nbgrad import warn_once

    monkeypatch.setattr(warn_once, "given", set())
    for shape, start in (((2, 3, 4), "The use of `x.T` on tensors"), ((), "Tensor.T is deprec")):
        with pytest.warns(UserWarning) as caught:
            nbgrad.ones(shape).T  # noqa: B018
        (mine,) = [str(w.message) for w in caught]
        assert mine.startswith(start)
        with warnings.catch_warnings(record=True) as real:
            warnings.simplefilter("always")
            torch.ones(shape).T  # noqa: B018
        assert all(str(w.message).startswith(mine) for w in real)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            nbgrad.ones(shape).T  # noqa: B018 - once only
            nbgrad.ones(2, 3).T  # noqa: B018 - and never for a matrix
