"""L-BFGS: a quasi-Newton method that keeps the last few steps and gradient changes to estimate
the inverse Hessian, with an optional strong Wolfe line search.

Written from the algorithm (Nocedal & Wright, *Numerical Optimization*, 2nd ed.: Algorithm 7.4,
the two-loop recursion; Algorithms 3.5 and 3.6, a line search for the strong Wolfe conditions;
eq. 3.59, the minimiser of a cubic through two points with their slopes) to step as PyTorch's
``torch.optim.LBFGS`` steps: the same choices of direction, first step length, stopping tests and
line-search safeguards (those PyTorch took from Mark Schmidt's minFunc), so that the parameters
after each ``step(closure)`` are PyTorch's to rounding.

Every vector here is one flat NumPy array over all parameters (concatenated in order). Scalars
computed from them (dot products, ``H_diag``, ``1 / ys``) stay NumPy scalars of the parameters'
dtype, which mix with Python floats as PyTorch's 0-d tensors do (NumPy 2 promotion), so each
comparison in the line search is made in the precision PyTorch makes it in.
"""

import functools

import numpy as np

from nbgrad.autograd import grad_mode
from nbgrad.autograd.tensor import Tensor
from nbgrad.optim.optimizer import Optimizer, bump_version

# Sufficient decrease (Armijo) and curvature constants of the strong Wolfe conditions.
SUFFICIENT_DECREASE = 1e-4
CURVATURE = 0.9
# The line search's own tolerance on the width of its bracket (PyTorch does not pass the
# optimizer's tolerance_change to it).
BRACKET_TOLERANCE = 1e-9
# A curvature pair (s, y) with s.y at or below this is not kept: it would make the
# inverse-Hessian estimate indefinite.
MIN_CURVATURE = 1e-10


def _plus_scaled(x, scale, y):
    """x + scale * y rounded once, as PyTorch's ``x.add(y, alpha=scale)`` computes it on the CPU
    (a fused multiply-add): for float32 the sum is formed in float64, where the product is
    exact. The steps and the two-loop recursion use it so that float32 runs round as PyTorch's."""
    if x.dtype == np.float32:
        exact = x.astype(np.float64) + np.float64(scale) * y.astype(np.float64)
        return exact.astype(np.float32)
    return x + np.asarray(scale, x.dtype) * y


def _cubic_minimum(a, f_a, slope_a, b, f_b, slope_b, bounds=None):
    """The minimiser of the cubic through (a, f_a) and (b, f_b) with slopes slope_a, slope_b
    (Nocedal & Wright eq. 3.59), clipped to ``bounds`` (default: the interval between a and b).
    When the cubic has no local minimum, the middle of the bounds."""
    low, high = bounds if bounds is not None else ((a, b) if a <= b else (b, a))
    theta = slope_a + slope_b - 3 * (f_a - f_b) / (a - b)
    discriminant = theta**2 - slope_a * slope_b
    if not discriminant >= 0:
        return (low + high) / 2.0
    root = np.sqrt(discriminant)
    # Written from whichever end lies to the right, so the formula's denominator does not
    # cancel (the same point either way in exact arithmetic).
    if a <= b:
        point = b - (b - a) * ((slope_b + root - theta) / (slope_b - slope_a + 2 * root))
    else:
        point = a - (a - b) * ((slope_a + root - theta) / (slope_a - slope_b + 2 * root))
    return min(max(point, low), high)


class _LinePoint:
    """One evaluation along the search line: step length, loss, gradient and slope there."""

    __slots__ = ("step", "loss", "grad", "slope")

    def __init__(self, step, loss, grad, slope):
        self.step, self.loss, self.grad, self.slope = step, loss, grad, slope


def _strong_wolfe_search(evaluate, first_step, direction, start, max_evaluations):
    """Find a step length along ``direction`` meeting the strong Wolfe conditions.

    ``evaluate(step)`` returns (loss, flat gradient) at the parameters moved by ``step *
    direction``; ``start`` is the point at step 0. First a bracket that must hold an acceptable
    step is found by moving out with cubic extrapolation; then it is narrowed ("zoom") by cubic
    interpolation, forcing progress of at least a tenth of the bracket. At most
    ``max_evaluations`` evaluations; the best point seen is returned with how many were made.
    """

    def point_at(step):
        loss, grad = evaluate(step)
        return _LinePoint(step, loss, grad, grad.dot(direction))

    def decreases_enough(point):
        return point.loss > start.loss + SUFFICIENT_DECREASE * point.step * start.slope

    def flat_enough(point):
        return abs(point.slope) <= -CURVATURE * start.slope

    largest_move = np.abs(direction).max()
    trial = point_at(first_step)
    evaluations, moves = 1, 0
    previous = start
    bracket, done = None, False

    # Phase 1: widen until an acceptable step is found or bracketed.
    while moves < max_evaluations:
        if decreases_enough(trial) or (moves > 1 and trial.loss >= previous.loss):
            bracket = [previous, trial]
            break
        if flat_enough(trial):
            bracket, done = [trial], True
            break
        if trial.slope >= 0:
            bracket = [previous, trial]
            break
        # Extrapolate: at least 1% past the current step, at most ten times it.
        shortest = trial.step + 0.01 * (trial.step - previous.step)
        longest = trial.step * 10
        next_step = _cubic_minimum(
            previous.step,
            previous.loss,
            previous.slope,
            trial.step,
            trial.loss,
            trial.slope,
            bounds=(shortest, longest),
        )
        previous = trial
        trial = point_at(next_step)
        evaluations += 1
        moves += 1
    if moves == max_evaluations:
        bracket = [start, trial]

    def ends_by_loss():
        """(index of the lower end, index of the higher end) of the bracket, by loss."""
        return (0, 1) if bracket[0].loss <= bracket[-1].loss else (1, 0)

    # Phase 2: narrow the bracket.
    low, high = ends_by_loss()
    stalled = False
    while not done and moves < max_evaluations:
        left, right = bracket
        if abs(right.step - left.step) * largest_move < BRACKET_TOLERANCE:
            break
        step = _cubic_minimum(left.step, left.loss, left.slope, right.step, right.loss, right.slope)
        top = max(left.step, right.step)
        bottom = min(left.step, right.step)
        margin = 0.1 * (top - bottom)
        # A point too near an end makes little progress: the second time in a row (or when
        # it is at or past an end), move it a tenth of the bracket inside.
        if min(top - step, step - bottom) < margin:
            if stalled or step >= top or step <= bottom:
                step = top - margin if abs(step - top) < abs(step - bottom) else bottom + margin
                stalled = False
            else:
                stalled = True
        else:
            stalled = False

        trial = point_at(step)
        evaluations += 1
        moves += 1
        if decreases_enough(trial) or trial.loss >= bracket[low].loss:
            bracket[high] = trial
            low, high = ends_by_loss()
        else:
            if flat_enough(trial):
                done = True
            elif trial.slope * (bracket[high].step - bracket[low].step) >= 0:
                # The minimum lies between the trial and the old lower end.
                bracket[high] = bracket[low]
            bracket[low] = trial

    best = bracket[low]
    return best.loss, best.grad, best.step, evaluations


def _as_state_value(value):
    """NumPy arrays and scalars of the algorithm as the Tensors PyTorch keeps in its state."""
    if isinstance(value, (np.ndarray, np.generic)):
        return Tensor._make(np.array(value))
    if isinstance(value, list):
        return [_as_state_value(item) for item in value]
    return value


def _from_state_value(value):
    if isinstance(value, Tensor):
        data = value._data
        return data[()] if data.ndim == 0 else data.copy()
    if isinstance(value, list):
        return [_from_state_value(item) for item in value]
    return value


class LBFGS(Optimizer):
    """L-BFGS over all parameters as one vector; ``step(closure)`` runs up to ``max_iter``
    iterations, each of them::

        d = -H g                   H: the inverse Hessian estimated from the last
                                   ``history_size`` pairs (s, y) by the two-loop recursion
        t = lr                     (on the very first iteration min(1, 1 / |g|_1) * lr)
        t = strong_wolfe(t)        with line_search_fn="strong_wolfe"
        x = x + t d

    stopping early when the gradient's largest entry is at most ``tolerance_grad``, when the
    step or the change of the loss is below ``tolerance_change``, or after ``max_eval``
    evaluations of the closure. Returns the closure's first loss.
    """

    def __init__(
        self,
        params,
        lr=1,
        max_iter=20,
        max_eval=None,
        tolerance_grad=1e-7,
        tolerance_change=1e-9,
        history_size=100,
        line_search_fn=None,
    ):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not lr >= 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # --- the parameters as one vector -----------------------------------------------------

    def _flat_grad(self):
        pieces = [
            np.zeros(p._data.size, p._data.dtype) if p.grad is None else p.grad._data.ravel()
            for p in self._params
        ]
        return np.concatenate(pieces)

    def _move(self, step, direction):
        """x = x + step * direction, in each parameter's memory (a new version of each)."""
        offset = 0
        for param in self._params:
            values = param._data
            piece = direction[offset : offset + values.size].reshape(values.shape)
            values[...] = _plus_scaled(values, np.asarray(step, values.dtype), piece)
            bump_version(param)
            offset += values.size

    def _restore(self, saved):
        for param, values in zip(self._params, saved):
            param._data[...] = values
            bump_version(param)

    def _loss_and_grad_at(self, closure, origin, step, *, direction):
        """The loss and gradient at origin + step * direction; the parameters are put back."""
        self._move(step, direction)
        loss = float(closure())
        grad = self._flat_grad()
        self._restore(origin)
        return loss, grad

    # --- the step -----------------------------------------------------------------------

    def step(self, closure):
        if len(self.param_groups) != 1:
            raise AssertionError(
                f"Expected exactly one param_group, but got {len(self.param_groups)}"
            )
        # The closure always runs with grad enabled, also from inside the no_grad step.
        with grad_mode.no_grad():
            return self._iterate(grad_mode.enable_grad()(closure))

    def _iterate(self, closure):
        group = self.param_groups[0]
        lr = float(group["lr"]) if isinstance(group["lr"], Tensor) else group["lr"]
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]
        line_search = group["line_search_fn"]

        # All of L-BFGS's state is global; PyTorch keeps it under the first parameter.
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        first_loss = closure()
        loss = float(first_loss)
        evaluations = 1
        state["func_evals"] += 1
        grad = self._flat_grad()
        if np.abs(grad).max() <= tolerance_grad:
            return first_loss

        # What the previous step() left, to continue from.
        remembered = {
            key: _from_state_value(state.get(key))
            for key in (
                "d",
                "t",
                "old_dirs",
                "old_stps",
                "ro",
                "H_diag",
                "prev_flat_grad",
                "prev_loss",
            )
        }
        direction, step = remembered["d"], remembered["t"]
        steps_taken, grad_changes = remembered["old_stps"], remembered["old_dirs"]
        inverse_curvatures, hessian_scale = remembered["ro"], remembered["H_diag"]
        previous_grad, previous_loss = remembered["prev_flat_grad"], remembered["prev_loss"]
        coefficients = _from_state_value(state.get("al"))

        iterations = 0
        while iterations < max_iter:
            iterations += 1
            state["n_iter"] += 1

            if state["n_iter"] == 1:
                # No curvature known yet: steepest descent.
                direction = -grad
                steps_taken, grad_changes, inverse_curvatures = [], [], []
                hessian_scale = 1
            else:
                grad_change = grad - previous_grad
                last_step = direction * step
                curvature = grad_change.dot(last_step)
                if curvature > MIN_CURVATURE:
                    if len(grad_changes) == history_size:
                        grad_changes.pop(0)
                        steps_taken.pop(0)
                        inverse_curvatures.pop(0)
                    grad_changes.append(grad_change)
                    steps_taken.append(last_step)
                    inverse_curvatures.append(1.0 / curvature)
                    # The initial inverse Hessian gamma I, gamma = s.y / y.y (N&W eq. 7.20).
                    hessian_scale = curvature / grad_change.dot(grad_change)
                if coefficients is None:
                    coefficients = [None] * history_size
                    state["al"] = None  # its place among the keys is PyTorch's (filled below)
                direction = self._two_loop(
                    grad,
                    steps_taken,
                    grad_changes,
                    inverse_curvatures,
                    hessian_scale,
                    coefficients,
                )

            previous_grad = grad.copy()
            previous_loss = loss

            if state["n_iter"] == 1:
                step = min(1.0, 1.0 / np.abs(grad).sum()) * lr
            else:
                step = lr
            slope = grad.dot(direction)
            if slope > -tolerance_change:
                break  # not a descent direction (to within the tolerance)

            used = 0
            if line_search is not None:
                if line_search != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                origin = [p._data.copy() for p in self._params]
                loss, grad, step, used = _strong_wolfe_search(
                    functools.partial(self._loss_and_grad_at, closure, origin, direction=direction),
                    step,
                    direction,
                    _LinePoint(0, loss, grad.copy(), slope),
                    max_eval - evaluations,
                )
                self._move(step, direction)
                at_optimum = np.abs(grad).max() <= tolerance_grad
            else:
                self._move(step, direction)
                at_optimum = False
                # After the last iteration the closure is not run again: step() returns the
                # first loss, and in a stochastic setting a fresh loss would tell nothing.
                if iterations != max_iter:
                    loss = float(closure())
                    grad = self._flat_grad()
                    at_optimum = np.abs(grad).max() <= tolerance_grad
                    used = 1
            evaluations += used
            state["func_evals"] += used

            if iterations == max_iter or evaluations >= max_eval or at_optimum:
                break
            if np.abs(direction * step).max() <= tolerance_change:
                break  # the parameters hardly move
            if abs(loss - previous_loss) < tolerance_change:
                break  # the loss hardly changes

        state.update(
            d=_as_state_value(direction),
            t=_as_state_value(step),
            old_dirs=_as_state_value(grad_changes),
            old_stps=_as_state_value(steps_taken),
            ro=_as_state_value(inverse_curvatures),
            H_diag=_as_state_value(hessian_scale),
            prev_flat_grad=_as_state_value(previous_grad),
            prev_loss=previous_loss,
        )
        if coefficients is not None:
            state["al"] = _as_state_value(coefficients)
        return first_loss

    @staticmethod
    def _two_loop(grad, steps_taken, grad_changes, inverse_curvatures, scale, coefficients):
        """-H g by the two-loop recursion (N&W Algorithm 7.4): H is the inverse Hessian that the
        kept pairs (s_i, y_i) imply, starting from ``scale`` times the identity."""
        q = -grad
        for i in reversed(range(len(steps_taken))):
            coefficients[i] = steps_taken[i].dot(q) * inverse_curvatures[i]
            q = _plus_scaled(q, -coefficients[i], grad_changes[i])
        r = q * scale
        for i in range(len(steps_taken)):
            correction = grad_changes[i].dot(r) * inverse_curvatures[i]
            r = _plus_scaled(r, coefficients[i] - correction, steps_taken[i])
        return r
