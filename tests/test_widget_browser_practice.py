"""Practice mode in a real browser: a ``save_html`` page of a practice widget (offline, no
kernel), answered with real keystrokes: right and wrong answers, the verdicts, the score, the
list of steps got wrong, the reveal, the working with the numbers put in, and the chain rule in
words. On nbgrad's trace of e = (a + b) * d and on real PyTorch's trace of a softmax + NLL layer.
Screenshots at 1400x900 and 1024x768 go to test-artifacts/practice-*.png. The fixtures
(chromium) are test_widget_browser.py's."""

import shutil

import numpy as np
import pytest

import nbgrad
from nbgrad.widget import GraphWidget

playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
from test_widget_browser import ARTIFACTS, browser  # noqa: E402, F401 - a fixture

pytestmark = pytest.mark.skipif(
    shutil.which("chromium") is None, reason="needs Debian's chromium (apt-get install chromium)"
)


# select the words of the step as a reader would (a range over the paragraph) and read it back
SELECT_THE_WORDS = """() => {
  const words = document.querySelector('[data-role="practice"] [data-role="chain-words"]');
  const range = document.createRange();
  range.selectNodeContents(words);
  getSelection().removeAllRanges();
  getSelection().addRange(range);
  return getSelection().toString();
}"""


def _open(browser, path, width, height):  # noqa: F811 - the fixture's name
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.goto(path.as_uri())
    page.wait_for_selector('[data-role="practice"]')
    return context, page


def _answer(page, edge, text):
    """Click the answer field of an edge, type the text key by key, press Enter."""
    page.locator(f'[data-role="practice"] [data-edge="{edge}"] input').click()
    page.keyboard.type(text)
    page.keyboard.press("Enter")


def _text(page, selector):
    return page.locator(f'[data-role="practice"] {selector}').inner_text()


def test_practising_e_equals_a_plus_b_times_d(tmp_path, browser):  # noqa: F811
    with nbgrad.record() as trace:
        a = nbgrad.tensor(2.0, requires_grad=True)
        b = nbgrad.tensor(3.0, requires_grad=True)
        c = a + b
        d = nbgrad.tensor(4.0, requires_grad=True)
        e = c * d
        e.backward()
    path = GraphWidget(trace, practice=True).save_html(tmp_path / "practice.html")
    context, page = _open(browser, path, 1400, 900)
    assert "rtol 0.001, atol 0.0001" in _text(page, '[data-role="tolerance"]')

    # before any answer, no gradient shows: d's .grad in the inspector is hidden
    page.locator('[data-node-id="n4"]').click()  # d's AccumulateGrad
    assert "hidden" in page.locator('[data-role="inspector"] [data-role="grad"]').inner_text()
    page.locator('[data-role="practice-start"]').click()
    # the timeline will not pass step 1 before it is answered
    page.locator('[data-role="last"]').click()
    assert page.locator('[data-role="step-label"]').inner_text() == "step 1 of 5: MulBackward0"
    assert "MulBackward0 (e = c * d) got dL/de = 1." in _text(page, '[data-role="practice-got"]')
    assert "∂L/∂c = d · ∂L/∂e" in _text(page, '[data-edge="0"]')

    # not a number: said, not counted
    _answer(page, 0, "four")
    assert _text(page, '[data-edge="0"] [data-role="verdict"]') == '"four" is not a number.'
    page.locator('[data-role="practice"] [data-edge="0"] input').fill("")
    # wrong (de/dc is d = 4, not c = 5): the recorded value and the working with numbers
    _answer(page, 0, "5")
    assert (
        _text(page, '[data-edge="0"] [data-role="verdict"]')
        == "✗ not right: the recorded value is 4"
    )
    assert _text(page, '[data-edge="0"] [data-role="working"]') == "∂L/∂c = 4 · 1 = 4"
    assert page.locator('[data-role="practice"] [data-role="chain-words"]').count() == 0
    # the focus moved on to the next field: type straight into it
    page.keyboard.type("5")
    page.keyboard.press("Enter")
    assert (
        _text(page, '[data-edge="1"] [data-role="verdict"]') == "✓ right: the recorded value is 5"
    )
    assert _text(page, '[data-role="score"]') == "score 1 / 2 (2 to go)"
    assert _text(page, '[data-role="wrong-list"]') == "got wrong: step 1 → c"
    words = _text(page, '[data-role="chain-words"]')
    assert words == (
        "MulBackward0 got dL/de = 1; de/dc = d = 4, so it sent 4 to AddBackward0 (c = a + b); "
        "de/dd = c = 5, so it sent 5 to d"
    )
    page.screenshot(path=str(ARTIFACTS / "practice-simple-1400x900.png"))

    # step 2 is d's AccumulateGrad: nothing to answer, and d's .grad is revealed
    page.keyboard.press("Enter")  # the focus is on "next step"
    assert (
        page.locator('[data-role="step-label"]').inner_text() == "step 2 of 5: AccumulateGrad (d)"
    )
    assert page.locator('[data-role="inspector"] [data-role="grad"]').inner_text().strip() == "5."
    page.locator('[data-role="practice-next"]').click()
    _answer(page, 0, "[4]")
    assert (
        _text(page, '[data-edge="0"] [data-role="verdict"]') == "✓ right: the recorded value is 4"
    )
    page.locator('[data-role="practice"] [data-edge="1"] [data-role="show-me"]').click()
    assert _text(page, '[data-edge="1"] [data-role="verdict"]') == "shown: 4"
    assert _text(page, '[data-edge="1"] [data-role="working"]') == "∂L/∂b = 4 = 4"
    assert _text(page, '[data-role="score"]') == "score 2 / 4 (all answered)"
    assert _text(page, '[data-role="wrong-list"]') == "got wrong: step 1 → c, step 3 → b"
    # the words are plain text a reader can select
    selected = page.evaluate(SELECT_THE_WORDS)
    assert selected == (
        "AddBackward0 got dL/dc = 4; dc/da = 1, so it sent 4 to a; dc/db = 1, so it sent 4 to b"
    )
    # a link in the wrong list goes back to that step, answers shown read-only
    page.locator('[data-wrong-step="1"]').click()
    assert page.locator('[data-role="step-label"]').inner_text() == "step 1 of 5: MulBackward0"
    assert page.locator('[data-role="practice"] [data-edge="0"] input').input_value() == "5"
    assert (
        page.locator('[data-role="practice"] [data-edge="0"] input').get_attribute("readonly") == ""
    )
    page.set_viewport_size({"width": 1024, "height": 768})
    page.screenshot(path=str(ARTIFACTS / "practice-simple-1024x768.png"))
    assert page.errors == []
    context.close()


def test_practising_a_softmax_and_nll_layer_recorded_by_pytorch(tmp_path, browser):  # noqa: F811
    pytest.importorskip("torch")
    from IPython.testing.globalipapp import get_ipython

    shell = get_ipython()
    shell.run_cell("%load_ext nbgrad", store_history=False)
    cell = (
        "%%autograd --no-show --name practice_trace\n"
        "import torch\n"
        "import torch.nn.functional as F\n"
        "x = torch.tensor([[1.0, 2.0, 0.5]])\n"
        "W = torch.tensor([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.2]], requires_grad=True)\n"
        "z = x @ W\n"
        "loss = F.cross_entropy(z, torch.tensor([1]))\n"
        "loss.backward()\n"
    )
    assert shell.run_cell(cell, store_history=False).success
    trace = shell.user_ns.pop("practice_trace")
    assert trace.to_dict()["producer"]["engine"] == "torch"

    # the answers, by hand in NumPy: NLL sends -1 at the target; log-softmax sends
    # softmax(z) - onehot; the matmul sends x^T times that to W
    x = np.array([[1.0, 2.0, 0.5]])
    w = np.array([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.2]])
    z = x @ w
    softmax = np.exp(z) / np.exp(z).sum()
    to_z = softmax - np.array([[0.0, 1.0]])
    to_w = x.T @ to_z

    path = GraphWidget(trace, practice=True).save_html(tmp_path / "softmax.html")
    context, page = _open(browser, path, 1024, 768)
    page.locator('[data-role="practice-start"]').click()
    assert "NllLossBackward0" in page.locator('[data-role="step-label"]').inner_text()
    _answer(page, 0, "0 -1")
    assert (
        _text(page, '[data-edge="0"] [data-role="verdict"]')
        == "✓ right: the recorded value is [0, -1]"
    )
    page.keyboard.press("Enter")  # next step
    assert "LogSoftmaxBackward0" in page.locator('[data-role="step-label"]').inner_text()
    typed = " ".join(f"{v:.5f}" for v in to_z.ravel())
    _answer(page, 0, typed)
    assert _text(page, '[data-edge="0"] [data-role="verdict"]').startswith("✓ right")
    page.keyboard.press("Enter")
    assert "MmBackward0" in page.locator('[data-role="step-label"]').inner_text()
    # one number off in a 3x2 answer: wrong, and says which
    wrong = to_w.copy()
    wrong[2, 1] += 0.5
    rows = "; ".join(", ".join(f"{v:.5f}" for v in row) for row in wrong)
    edge = page.locator('[data-role="practice"] .practice-edge').first.get_attribute("data-edge")
    _answer(page, edge, f"[{rows}]")
    assert _text(page, f'[data-edge="{edge}"] [data-role="verdict"]').startswith("✗ not right")
    assert _text(page, ".practice-message") == (
        "✗ 1 of 6 numbers are not right (the first is number 6)"
    )
    assert _text(page, '[data-role="score"]') == "score 2 / 3 (all answered)"
    assert _text(page, '[data-role="wrong-list"]') == "got wrong: step 3 → W"
    page.screenshot(path=str(ARTIFACTS / "practice-softmax-wrong-1024x768.png"))
    words = _text(page, '[data-role="chain-words"]')
    assert words.startswith(
        "MmBackward0 got dL/dz = [0.4378, -0.4378]; dL/dW = xᵀ dL/dz, so it sent "
    )
    assert words.endswith("to W")
    page.keyboard.press("Enter")  # the last step: W's AccumulateGrad, and W.grad is revealed
    assert "AccumulateGrad (W) got dL/dW = [0.4378, " in _text(page, '[data-role="practice-got"]')
    assert "AccumulateGrad got dL/dW" in _text(page, '[data-role="chain-words"]')
    assert _text(page, '[data-role="practice-end"]').startswith("That was the last step")
    grad = page.locator('[data-role="inspector"] [data-role="grad"]').inner_text()
    assert "hidden" not in grad and f"{to_w[1, 0]:.4f}" in grad
    page.screenshot(path=str(ARTIFACTS / "practice-softmax-1024x768.png"))
    page.set_viewport_size({"width": 1400, "height": 900})
    page.screenshot(path=str(ARTIFACTS / "practice-softmax-1400x900.png"))
    assert page.errors == []
    context.close()
