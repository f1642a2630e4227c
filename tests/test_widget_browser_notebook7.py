"""Issue 17's learning tools with a live kernel, in Notebook 7 (the `notebook` package's pages)
and in JupyterLab, served by the same server: practice mode answered by typing, the answers
reaching Python through the widget's synced state, the chain rule in words; in Notebook 7 the
local Jacobian and "check this node" asking the running kernel (in JupyterLab and in saved pages:
tests/test_widget_browser_nodecheck.py; practice in saved pages:
tests/test_widget_browser_practice.py)."""

import json
import re

import numpy as np
import pytest

from tests.test_widget_browser import (  # noqa: F401 - fixtures
    ARTIFACTS,
    _open_notebook,
    _run_all,
    browser,
    lab,
    playwright_api,
    put_notebook,
)
from tests.test_widget_browser_nodecheck import LIVE_CELLS, WEIGHTS, X, worktree_kernel_path  # noqa: F401

pytest.importorskip("notebook", minversion="7")

PRACTICE_CELLS = [
    "%load_ext nbgrad",
    """import nbgrad as torch
from nbgrad.widget import GraphWidget

with torch.record() as trace:
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(3.0, requires_grad=True)
    d = torch.tensor(4.0, requires_grad=True)
    c = a + b
    e = c * d
    e.backward()
practice = GraphWidget(trace, practice=True)
practice""",
    "import json\n"
    'print("ANSWERS", json.dumps([[r["edge"], r["right"]] for r in practice.practice_results]))',
]


@pytest.fixture
def page(browser):  # noqa: F811
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    yield context.new_page()
    context.close()


def _answer(practice, edge, text, page):
    practice.locator(f'[data-edge="{edge}"] input').click()
    page.keyboard.type(text)
    page.keyboard.press("Enter")


# Notebook 7's pages and JupyterLab's, served by the same server
FRONT_ENDS = {"notebook7": "notebooks", "jupyterlab": "lab/tree"}


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_practice_mode_typed_and_read_back_in_python(worktree_kernel_path, lab, page, front_end):  # noqa: F811
    name = f"practice-{front_end}.ipynb"
    put_notebook(lab, name, PRACTICE_CELLS)
    try:
        _open_notebook(page, f"{lab}/{FRONT_ENDS[front_end]}/{name}")
        _run_all(page)
        practice = page.locator('.nbgrad-widget [data-role="practice"]').first
        practice.wait_for(timeout=60_000)
        practice.locator('[data-role="practice-start"]').click()
        # e = (a + b) * d, a = 2, b = 3, d = 4: MulBackward0 sends d = 4 to c's node, c = 5 to d
        _answer(practice, 0, "4", page)
        _answer(practice, 1, "6", page)
        verdicts = practice.locator('[data-role="verdict"]').all_inner_texts()
        assert verdicts == [
            "✓ right: the recorded value is 4",
            "✗ not right: the recorded value is 5",
        ]
        words = practice.locator('[data-role="chain-words"]').inner_text()
        assert "so it sent 4 to AddBackward0 (c = a + b)" in words
        assert "so it sent 5 to d" in words
        # the answers reach Python: run the cell that prints them again
        page.locator(".jp-Cell").nth(2).locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        printed = page.locator(".jp-OutputArea-output", has_text=re.compile(r"ANSWERS \[\["))
        printed.wait_for(timeout=30_000)
        answers = json.loads(printed.inner_text().split("ANSWERS", 1)[1])
        assert answers == [[0, True], [1, False]]
        ARTIFACTS.mkdir(exist_ok=True)
        practice.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"practice-live-{front_end}.png"))
    except Exception:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"failure-practice-live-{front_end}.png"))
        raise


def test_node_check_and_jacobian_in_notebook_7(worktree_kernel_path, lab, page):  # noqa: F811
    put_notebook(lab, "nodecheck7.ipynb", LIVE_CELLS)
    try:
        _open_notebook(page, f"{lab}/notebooks/nodecheck7.ipynb")
        _run_all(page)
        inspector = page.locator('.nbgrad-widget [data-role="inspector"]').first
        inspector.locator('[data-role="check-node"]').wait_for(timeout=60_000)
        inspector.locator('[data-role="check-node"]').click()
        verdict = inspector.locator('[data-role="check-verdict"]')
        verdict.wait_for(timeout=60_000)
        assert "WRONG: the gradient of input x is off" in verdict.inner_text()
        checked = inspector.locator('[data-role="check-result"] [data-input="x"]')
        shown = [float(v) for v in checked.locator("tr.numeric td").all_inner_texts()]
        e = np.exp(np.asarray(X))
        y = e / e.sum()
        assert np.allclose(shown, np.asarray(WEIGHTS) @ (np.diag(y) - np.outer(y, y)), atol=1e-3)
        verdict.scroll_into_view_if_needed()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "notebook7-nodecheck.png"))
        # a built-in node's local Jacobian: y * w is diag(w)
        page.locator('.nbgrad-widget [data-label="MulBackward0"]').first.click()
        matrix = inspector.locator('[data-role="jacobian-matrix"]')
        matrix.wait_for(timeout=30_000)
        rows = [
            [float(v) for v in row.locator("td").all_inner_texts()]
            for row in matrix.locator("tbody tr").all()
        ]
        assert np.allclose(rows, np.diag(WEIGHTS))
    except Exception:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "failure-notebook7-nodecheck.png"))
        raise
