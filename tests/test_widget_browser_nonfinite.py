"""Debugging gradients in a real browser (Debian's chromium, Playwright): a trace with a NaN opens
on the node that made it, marked, with the path it spread along highlighted; the "|grad|
colours" toggle colours nodes and edges, shows the legend and the parameter table, which sorts
on a click. Pages are ``save_html`` files (the widget as a notebook shows it, without a kernel).
Screenshots at 1024x768 and 1400x900 go to test-artifacts/nonfinite-*.png."""

import numpy as np
import pytest

import nbgrad
from nbgrad.widget import GraphWidget
from tests.test_widget_browser import ARTIFACTS, browser, playwright_api  # noqa: F401

VIEWPORTS = [(1024, 768), (1400, 900)]


def _record_log_of_zero(engine):
    T = nbgrad
    if engine == "torch":
        T = pytest.importorskip("torch")
    with nbgrad.record(engine=engine) as trace:
        x = T.tensor([0.0, 1.0, 2.0], requires_grad=True)
        w = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = T.log(x)
        z = y * w
        loss = z.sum()
        loss.backward()
    return trace


def _record_deep_sigmoid(depth=6):
    import nbgrad.nn as nn

    nbgrad.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(4, 4), nn.Sigmoid()]
    model = nn.Sequential(*layers)
    x = nbgrad.randn(8, 4)
    with nbgrad.record() as trace:
        loss = model(x).pow(2).mean()
        loss.backward()
    return trace


@pytest.fixture
def open_page(browser, tmp_path):  # noqa: F811
    contexts = []

    def open_(trace, width, height, name):
        context = browser.new_context(viewport={"width": width, "height": height})
        contexts.append(context)
        page = context.new_page()
        page.problems = []
        page.on("pageerror", lambda error: page.problems.append(str(error)))
        path = GraphWidget(trace).save_html(tmp_path / f"{name}-{width}.html")
        page.goto(path.as_uri())
        page.wait_for_selector("[data-node-id]")
        return page

    yield open_
    for context in contexts:
        context.close()


@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
@pytest.mark.parametrize("viewport", VIEWPORTS, ids=[f"{w}x{h}" for w, h in VIEWPORTS])
def test_opens_on_the_first_nonfinite_value_with_its_path(open_page, engine, viewport):
    trace = _record_log_of_zero(engine)
    page = open_page(trace, *viewport, f"nan-{engine}")
    # log(0) = -inf is made by the forward op log; its node is LogBackward0
    log_node = trace.node("LogBackward0").id
    origin = page.locator(f'[data-node-id="{log_node}"]')
    assert "nonfinite" in origin.get_attribute("class").split()
    assert page.locator('[data-role="inspector"]').get_attribute("data-selected") == log_node
    section = page.locator('[data-role="inspector"] [data-role="nonfinite-section"]')
    assert "First -inf" in section.text_content()
    assert "line" in section.inner_text() and "every input was finite" in section.inner_text()
    # the path: MulBackward0 sent -inf (y) to w's AccumulateGrad; LogBackward0 sent 0 * ... to x
    mul = trace.node("MulBackward0").id
    assert "nonfinite-path" in page.locator(f'[data-node-id="{mul}"]').get_attribute("class")
    accumulate_w = next(n.id for n in trace.nodes if n.variable is trace.tensors["w"])
    edge = page.locator(f'path.edge[data-from="{mul}"][data-to="{accumulate_w}"]')
    assert "nonfinite-path" in edge.get_attribute("class")
    # the node is on screen
    box = origin.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= viewport[0]
    banner = page.locator('[data-role="nonfinite-banner"]').inner_text()
    assert "First -inf in forward op log" in banner and "y = T.log(x)" in banner
    # the forward view marks the op log
    page.locator('[data-view="forward"]').click()
    log_op = trace.node("LogBackward0").op.id
    assert "nonfinite" in page.locator(f'[data-node-id="{log_op}"]').get_attribute("class")
    page.locator('[data-view="backward"]').click()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"nonfinite-log0-{engine}-{viewport[0]}.png"))
    assert page.problems == []


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=[f"{w}x{h}" for w, h in VIEWPORTS])
def test_magnitude_toggle_colours_and_shows_legend_and_table(open_page, viewport):
    trace = _record_deep_sigmoid()
    page = open_page(trace, *viewport, "magnitude")
    assert page.locator('[data-role="magnitude-legend"]').count() == 0
    page.locator('[data-role="magnitude"]').click()
    assert page.locator('[data-role="magnitude"]').get_attribute("aria-pressed") == "true"
    legend = page.locator('[data-role="magnitude-legend"]')
    assert legend.is_visible()
    assert "|grad|" in legend.inner_text() and "log scale" in legend.inner_text()
    # every node that ran in backward has a colour class; the colours differ between the
    # first layer's weight (small gradient) and the last's
    first = next(n.id for n in trace.nodes if n.variable is trace.tensors["layers[0].weight"])
    last = next(n.id for n in trace.nodes if n.variable is trace.tensors["layers[10].weight"])

    def colour(node_id):
        page.locator(f'[data-node-id="{node_id}"]').scroll_into_view_if_needed()
        return page.eval_on_selector(
            f'[data-node-id="{node_id}"] .shape', "el => getComputedStyle(el).fill"
        )

    classes = page.locator(f'[data-node-id="{first}"]').get_attribute("class")
    assert any(c.startswith("mag-") for c in classes.split())
    assert colour(first) != colour(last)
    # the table: one row per parameter, sorted by ratio, smallest first
    table = page.locator('[data-role="magnitude-table"]')
    rows = table.locator("tbody tr")
    assert rows.count() == 12
    ratios = []
    for k in range(rows.count()):
        ratios.append(float(rows.nth(k).locator("td").nth(3).inner_text()))
    assert ratios == sorted(ratios)
    expected = sorted(
        (r for r in trace.grad_table()), key=lambda r: r.ratio
    )  # independently: norms by NumPy below
    assert rows.nth(0).locator("td").nth(0).inner_text() == expected[0].name
    tensor = trace.tensors[expected[0].name]
    np_ratio = np.linalg.norm(tensor.grad) / np.linalg.norm(tensor.value)
    # the trace carries |grad| and |param| to 3 digits, the table shows their ratio to 3: 1%
    assert float(rows.nth(0).locator("td").nth(3).inner_text()) == pytest.approx(np_ratio, rel=1e-2)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"nonfinite-magnitude-{viewport[0]}.png"))
    # a click on the head sorts the other way
    table.locator('th[data-column="ratio"] button').click()
    rows = page.locator('[data-role="magnitude-table"] tbody tr')
    assert rows.nth(0).locator("td").nth(0).inner_text() == expected[-1].name
    # a click on a name selects that parameter
    rows.nth(0).locator("a").click()
    selected = page.locator('[data-role="inspector"]').get_attribute("data-selected")
    assert selected == trace.tensors[expected[-1].name].id
    # off again: no colours, no legend
    page.locator('[data-role="magnitude"]').click()
    assert page.locator('[data-role="magnitude-legend"]').count() == 0
    assert not any(
        c.startswith("mag-")
        for c in page.locator(f'[data-node-id="{first}"]').get_attribute("class").split()
    )
    assert page.problems == []
