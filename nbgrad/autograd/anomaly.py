"""Anomaly detection: remember where each node was made; name the node whose backward failed."""

import traceback
import warnings

import numpy as np

enabled = False
_check_nan = True


class detect_anomaly:  # noqa: N801 - PyTorch's name
    """Context manager: record forward tracebacks and raise on NaN produced by a backward node."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should "
            "only be enabled for debugging.",
            stacklevel=2,
        )

    def __enter__(self):
        global enabled, _check_nan
        self._previous = (enabled, _check_nan)
        enabled, _check_nan = True, self.check_nan

    def __exit__(self, *exc):
        global enabled, _check_nan
        enabled, _check_nan = self._previous
        return False


def set_detect_anomaly(mode, check_nan=True):
    global enabled, _check_nan
    enabled, _check_nan = bool(mode), check_nan


def is_anomaly_enabled():
    return enabled


def remember_forward(node):
    node.metadata["traceback_"] = traceback.format_stack()[:-3]


def _warn_with_forward_trace(node):
    trace = node.metadata.get("traceback_") if node._extras is not None else None
    if trace:
        warnings.warn(
            f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
            + "".join(trace),
            stacklevel=3,
        )


def check_outputs(node, outputs):
    if not _check_nan:
        return
    for i, grad in enumerate(outputs):
        if grad is None:
            continue
        data = grad if isinstance(grad, np.ndarray) else grad._data
        if np.isnan(data).any():
            _warn_with_forward_trace(node)
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


def report_failed_node(node, error):
    if enabled:
        _warn_with_forward_trace(node)
