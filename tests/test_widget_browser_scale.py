"""Large graphs in a real browser: a 1,000-node and a 10,000-node trace of an unrolled RNN (one
weight read at every step, no modules) open in chromium, paint, answer a click, and "expand all"
draws the whole graph or says why not. Speed itself is benchmarks/widget_render.py's job; the
bounds here are generous, to catch a frozen or crashed tab, not a slow one.

Screenshots of the 1,000-node trace at 1024x768 and 1400x900 go to test-artifacts/.
"""

import time

import pytest

import nbgrad
from nbgrad.widget import GraphWidget
from tests import test_widget_browser as base

# the browser fixtures (chromium's path and launch arguments) of the main browser test
ARTIFACTS = base.ARTIFACTS
browser = base.browser
page = base.page

GENEROUS_S = 60  # per action: a frozen tab, not a slow one, fails
LAYOUT_BUDGET = 8000  # js/src/fold.js: drawn nodes a redraw may lay out


def _rnn_trace(steps):
    """h = tanh(x_t @ W_ih + h @ W_hh + b), with a loss term per step: about 10 nodes a step."""
    import nbgrad as torch

    torch.manual_seed(0)
    w_ih = torch.randn(3, 8, requires_grad=True)
    w_hh = torch.randn(8, 8, requires_grad=True)
    b = torch.zeros(8, requires_grad=True)
    w_out = torch.randn(8, 1, requires_grad=True)
    xs = torch.randn(steps, 2, 3)
    ys = torch.randn(steps, 2, 1)
    with nbgrad.record(max_nodes=10**6) as trace:
        h = torch.zeros(2, 8)
        loss = 0
        for t in range(steps):
            h = torch.tanh(xs[t] @ w_ih + h @ w_hh + b)
            loss = loss + ((h @ w_out - ys[t]) ** 2).mean()
        loss.backward()
    return trace


def _open(page, path):
    start = time.monotonic()
    page.goto(path.as_uri())
    page.wait_for_selector("[data-node-id]", timeout=GENEROUS_S * 1000)
    return time.monotonic() - start


# The first drawn node matching a selector whose box lies inside the graph's viewport.
_VISIBLE_JS = """selector => {
  const frame = document.querySelector('[data-role=graph]').getBoundingClientRect();
  for (const el of document.querySelectorAll(selector)) {
    const r = el.getBoundingClientRect();
    if (r.width > 4 && r.left >= frame.left && r.right <= frame.right && r.top >= frame.top
        && r.bottom <= frame.bottom) return el.getAttribute('data-node-id');
  }
  return null;
}"""


def _visible(page, selector):
    node_id = page.evaluate(_VISIBLE_JS, selector)
    assert node_id, f"no {selector} on screen"
    return page.locator(f'[data-node-id="{node_id}"]')


def _click_selects(page, locator):
    """Click a drawn node; the inspector must show that node (a copy shows its original)."""
    node_id = locator.get_attribute("data-node-id")
    locator.click()
    inspector = page.locator('[data-role="inspector"]')
    original = node_id.split("~")[0]
    page.wait_for_function(
        "id => document.querySelector('[data-role=inspector]')"
        ".getAttribute('data-selected') === id",
        arg=original,
        timeout=GENEROUS_S * 1000,
    )
    assert inspector.get_attribute("data-selected") == original
    return original


@pytest.mark.parametrize("steps", [99, 999])
def test_a_large_rnn_trace_opens_and_answers_clicks(tmp_path, page, steps):
    trace = _rnn_trace(steps)
    path = GraphWidget(trace).save_html(tmp_path / "rnn.html")
    _open(page, path)
    status = page.locator('[data-role="status"]').inner_text()
    total = int(status.split(" nodes")[0])
    assert total >= 10 * steps - 10, status
    # it opens folded: the loop is one group per repetition, the top one open
    drawn = page.locator("[data-node-id]")
    assert 0 < drawn.count() < steps + 200, status
    assert page.locator('[data-kind="group"]').count() >= steps - 1
    _click_selects(page, _visible(page, '[data-node-id]:not([data-kind="group"])'))
    # a folded repetition opens on click
    before = drawn.count()
    _visible(page, '[data-kind="group"]').click()
    page.wait_for_function(f"() => document.querySelectorAll('[data-node-id]').length > {before}")
    # expand all: the whole graph (within the budget) or the status says the rest stays folded
    page.locator('[data-role="expand-all"]').click()
    page.wait_for_function(
        "() => !document.querySelector('[data-kind=group]') || document.querySelector("
        "'[data-role=status]').textContent.includes('stays folded')",
        timeout=GENEROUS_S * 1000,
    )
    status = page.locator('[data-role="status"]').inner_text()
    if "stays folded" in status:  # over the budget: opened as far as it allows, and says so
        assert LAYOUT_BUDGET / 2 < drawn.count() <= LAYOUT_BUDGET, status
    else:
        assert drawn.count() >= total, status  # each shared leaf is drawn once per use
    # a copy of a shared leaf selects the leaf's AccumulateGrad itself, and every copy lights up
    copies = page.locator('[data-node-id*="~"][data-label="AccumulateGrad"]')
    assert copies.count() >= min(steps, 500)
    copy = '[data-node-id*="~"][data-label="AccumulateGrad"]'
    original = _click_selects(page, _visible(page, copy))
    drawn_copies = page.locator(f'[data-node-id^="{original}~"]').count()
    assert drawn_copies > 1
    assert page.locator(f'[data-node-id^="{original}~"].selected').count() == drawn_copies
    assert page.problems == []


def test_screenshots_of_a_1k_rnn_trace(tmp_path, browser):
    path = GraphWidget(_rnn_trace(99)).save_html(tmp_path / "rnn.html")
    ARTIFACTS.mkdir(exist_ok=True)
    for width, height in ((1024, 768), (1400, 900)):
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        problems = []
        page.on("pageerror", lambda error, problems=problems: problems.append(str(error)))
        _open(page, path)
        page.screenshot(path=ARTIFACTS / f"widget-rnn-1k-open-{width}x{height}.png")
        page.locator('[data-role="expand-all"]').click()
        page.wait_for_function("() => !document.querySelector('[data-kind=group]')")
        page.screenshot(path=ARTIFACTS / f"widget-rnn-1k-expanded-{width}x{height}.png")
        page.get_by_role("button", name="fit", exact=True).click()
        page.screenshot(path=ARTIFACTS / f"widget-rnn-1k-fit-{width}x{height}.png")
        page.locator('[data-view="forward"]').click()
        page.screenshot(path=ARTIFACTS / f"widget-rnn-1k-forward-{width}x{height}.png")
        context.close()
        assert problems == []
