"""The local Jacobian and "check this node" in a real browser (Debian's chromium, Playwright),
in a save_html page: the Jacobian is in the trace, so it shows offline, with the program's names
on its axes; the check needs the kernel, and the page says so when the button is clicked.
Screenshots: test-artifacts/nodecheck-*.png."""

import os
import re

import numpy as np
import pytest

import nbgrad
from nbgrad.widget import GraphWidget
from tests.test_widget_browser import (  # noqa: F401 - fixtures
    ARTIFACTS,
    ROOT,
    _open_notebook,
    _run_all,
    browser,
    lab,
    playwright_api,
    put_notebook,
)

torch = pytest.importorskip("torch")

X = [1.0, 2.0, 0.5]
WEIGHTS = [1.0, -2.0, 3.0]
VIEWPORTS = [(1024, 768), (1400, 900)]


def softmax_page(engine, folder):
    T = nbgrad if engine == "nbgrad" else torch
    x = T.tensor(X, requires_grad=True)
    w = T.tensor(WEIGHTS)
    with nbgrad.record(engine=engine) as trace:
        y = T.softmax(x, dim=0)
        loss = (y * w).sum()
        loss.backward()
    return GraphWidget(trace).save_html(folder / f"softmax-{engine}.html")


def expected_jacobian():
    e = np.exp(np.asarray(X))
    y = e / e.sum()
    return np.diag(y) - np.outer(y, y)


@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
def test_the_softmax_jacobian_shows_offline_and_the_check_says_it_needs_the_kernel(
    browser,  # noqa: F811
    engine,
    tmp_path,
):
    path = softmax_page(engine, tmp_path)
    ARTIFACTS.mkdir(exist_ok=True)
    for width, height in VIEWPORTS:
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        problems = []
        page.on("pageerror", lambda error, problems=problems: problems.append(str(error)))
        page.goto(path.as_uri())
        page.locator('[data-label="SoftmaxBackward0"]').first.click()
        inspector = page.locator('[data-role="inspector"]')
        matrix = inspector.locator('[data-role="jacobian-matrix"]')
        matrix.wait_for()
        columns = matrix.locator("thead th").all_inner_texts()
        rows = matrix.locator("tbody th").all_inner_texts()
        assert columns[1:] == ["x[0]", "x[1]", "x[2]"]
        assert rows == ["y[0]", "y[1]", "y[2]"]
        shown = np.array(
            [
                [float(v) for v in line.split("\t")[1:]]
                for line in matrix.locator("tbody tr").all_inner_texts()
            ]
        )
        assert np.allclose(shown, expected_jacobian(), atol=1e-4)
        assert shown[0, 1] < 0  # the off-diagonal -y_i y_j
        identity = inspector.locator('[data-role="jacobian-identity"]').inner_text()
        assert "grad sent to x = grad in (a row) × J" in identity
        sent = np.asarray(WEIGHTS) @ expected_jacobian()
        numbers = [
            float(v)
            for v in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", identity.split("grad sent to x =")[-1])
        ]
        assert np.allclose(numbers, sent, atol=1e-4)
        # every label and number readable: the matrix fits in the inspector or scrolls inside it
        panel = inspector.bounding_box()
        assert inspector.evaluate("el => el.scrollWidth <= el.clientWidth + 1")
        inspector.locator('[data-role="jacobian"]').scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"nodecheck-jacobian-{engine}-{width}x{height}.png"))
        button = inspector.locator('[data-role="check-node"]')
        button.click()
        error = inspector.locator('[data-role="check-error"]')
        error.wait_for(timeout=5000)
        assert "needs the running kernel" in error.inner_text()
        button.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"nodecheck-offline-{engine}-{width}x{height}.png"))
        assert panel["width"] > 200
        assert problems == []
        context.close()


def diagonal_softmax_widget():
    """A custom Function with the diagonal-only softmax derivative (y - y^2), recorded."""

    class DiagonalSoftmax(nbgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = nbgrad.softmax(x, dim=0)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * (y - y * y)

    x = nbgrad.tensor(X, requires_grad=True)
    w = nbgrad.tensor(WEIGHTS)
    with nbgrad.record() as trace:
        y = DiagonalSoftmax.apply(x)
        loss = (y * w).sum()
        loss.backward()
    return GraphWidget(trace), trace


def test_a_check_answered_by_the_kernel_shows_analytic_and_numeric_and_names_the_input(
    browser,  # noqa: F811
    tmp_path,
):
    """The kernel's side is the widget's own message handler, run here in Python; the page's
    model hands the browser's request to it (through a function Playwright exposes), and its
    reply back, as anywidget's custom messages would."""
    widget, trace = diagonal_softmax_widget()
    replies = []
    widget.send = lambda message, buffers=None: replies.append(message)
    path = widget.save_html(tmp_path / "diagonal.html")
    text = path.read_text(encoding="utf-8")
    stand_in = 'if (message && message.type === "check") {{'.replace("{{", "{")
    assert stand_in in text
    # the page's model sends a check request to Python and emits its answer
    text = text.replace(
        stand_in,
        'if (message && message.type === "check") { '
        'emit("msg:custom", await window.kernel(message)); return; }\n    if (false) {',
    )
    path.write_text(text, encoding="utf-8")

    def kernel(message):
        widget._on_message(widget, message, [])
        return replies[-1]

    ARTIFACTS.mkdir(exist_ok=True)
    for width, height in VIEWPORTS:
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        page.expose_function("kernel", kernel)
        problems = []
        page.on("pageerror", lambda error, problems=problems: problems.append(str(error)))
        page.goto(path.as_uri())
        page.locator('[data-label="DiagonalSoftmaxBackward"]').first.click()
        inspector = page.locator('[data-role="inspector"]')
        # no Jacobian: it would run the user's backward (their code) when the trace is written
        inspector.locator('[data-role="check-node"]').wait_for(timeout=30_000)
        assert inspector.locator('[data-role="jacobian-matrix"]').count() == 0
        inspector.locator('[data-role="check-node"]').click()
        verdict = inspector.locator('[data-role="check-verdict"]')
        verdict.wait_for(timeout=10000)
        assert "WRONG" in verdict.inner_text() and "input x" in verdict.inner_text()
        checked = inspector.locator('[data-role="check-result"] [data-input="x"]')
        shown_analytic = [float(v) for v in checked.locator("tr.analytic td").all_inner_texts()]
        shown_numeric = [float(v) for v in checked.locator("tr.numeric td").all_inner_texts()]
        e = np.exp(np.asarray(X))
        y = e / e.sum()
        analytic = np.asarray(WEIGHTS) * (y - y * y)
        numeric = np.asarray(WEIGHTS) @ (np.diag(y) - np.outer(y, y))
        assert np.allclose(shown_analytic, analytic, atol=1e-3)
        assert np.allclose(shown_numeric, numeric, atol=1e-3)
        assert checked.locator(".mark").inner_text() == "✗ wrong"
        assert inspector.evaluate("el => el.scrollWidth <= el.clientWidth + 1")
        verdict.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"nodecheck-result-{width}x{height}.png"))
        assert problems == []
        context.close()


# --- live, in JupyterLab: the request goes through anywidget's comm to the kernel and back -------

LIVE_CELLS = [
    "%load_ext nbgrad",
    """import nbgrad
from nbgrad.widget import GraphWidget


class DiagonalSoftmax(nbgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = nbgrad.softmax(x, dim=0)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (y - y * y)


x = nbgrad.tensor([1.0, 2.0, 0.5], requires_grad=True)
with nbgrad.record() as trace:
    y = DiagonalSoftmax.apply(x)
    loss = (y * nbgrad.tensor([1.0, -2.0, 3.0])).sum()
    loss.backward()
GraphWidget(trace, selected=trace.node("DiagonalSoftmaxBackward").id)""",
]


@pytest.fixture(scope="module")
def worktree_kernel_path():
    """The kernels JupyterLab starts import this checkout's nbgrad."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), before) if p)
    yield
    if before is None:
        del os.environ["PYTHONPATH"]
    else:
        os.environ["PYTHONPATH"] = before


@pytest.fixture(scope="module")
def live_lab(worktree_kernel_path, lab):  # noqa: F811
    put_notebook(lab, "nodecheck.ipynb", LIVE_CELLS)
    return lab


def test_the_check_button_asks_the_running_kernel_in_jupyterlab(browser, live_lab):  # noqa: F811
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    try:
        _open_notebook(page, f"{live_lab}/lab/tree/nodecheck.ipynb")
        _run_all(page)
        widget = page.locator(".nbgrad-widget").first
        widget.wait_for(timeout=60_000)
        inspector = widget.locator('[data-role="inspector"]')
        inspector.locator('[data-role="check-node"]').wait_for(timeout=30_000)
        inspector.locator('[data-role="check-node"]').click()
        verdict = inspector.locator('[data-role="check-verdict"]')
        verdict.wait_for(timeout=60_000)
        assert "WRONG: the gradient of input x is off" in verdict.inner_text()
        checked = inspector.locator('[data-role="check-result"] [data-input="x"]')
        shown = [float(v) for v in checked.locator("tr.numeric td").all_inner_texts()]
        e = np.exp(np.asarray(X))
        y = e / e.sum()
        assert np.allclose(shown, np.asarray(WEIGHTS) @ (np.diag(y) - np.outer(y, y)), atol=1e-3)
        for width, height in VIEWPORTS:
            page.set_viewport_size({"width": width, "height": height})
            verdict.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / f"nodecheck-jupyterlab-{width}x{height}.png"))
    except Exception:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "failure-nodecheck-jupyterlab.png"))
        raise
    finally:
        context.close()
