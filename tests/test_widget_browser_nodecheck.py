"""The local Jacobian and "check this node" in a real browser (Debian's chromium, Playwright),
in a save_html page: the Jacobian is in the trace, so it shows offline, with the program's names
on its axes; the check needs the kernel, and the page says so when the button is clicked.
Screenshots: test-artifacts/nodecheck-*.png."""

import re

import numpy as np
import pytest

import nbgrad
from nbgrad.widget import GraphWidget
from tests.test_widget_browser import ARTIFACTS, browser, playwright_api  # noqa: F401

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
    browser, engine, tmp_path
):
    path = softmax_page(engine, tmp_path)
    ARTIFACTS.mkdir(exist_ok=True)
    for width, height in VIEWPORTS:
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        problems = []
        page.on("pageerror", lambda error: problems.append(str(error)))
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
            [[float(v) for v in line.split("\t")[1:]] for line in matrix.locator("tbody tr").all_inner_texts()]
        )
        assert np.allclose(shown, expected_jacobian(), atol=1e-4)
        assert shown[0, 1] < 0  # the off-diagonal -y_i y_j
        identity = inspector.locator('[data-role="jacobian-identity"]').inner_text()
        assert "grad sent to x = grad in (a row) × J" in identity
        sent = np.asarray(WEIGHTS) @ expected_jacobian()
        numbers = [float(v) for v in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", identity.split("grad sent to x =")[-1])]
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
