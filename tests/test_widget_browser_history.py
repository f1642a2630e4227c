"""The chart of a parameter across training steps (issue 18, part 3), in a real browser.

A training loop is recorded (nbgrad's engine and real PyTorch; three backward passes in full,
30 steps in the history) and written with ``save_html``; the page is opened at 1024x768 and
1400x900, a parameter's node is clicked, and the inspector must show the chart: three lines,
both axes labelled, numbers on the ticks, inside the panel and large enough to read.
Screenshots go to test-artifacts/history-*.png.
"""

import re

import numpy as np
import pytest

import nbgrad
from nbgrad.widget import GraphWidget
from tests.test_widget_browser import ARTIFACTS, browser, playwright_api  # noqa: F401

torch = pytest.importorskip("torch")

VIEWPORTS = [(1024, 768), (1400, 900)]
STEPS = 30


def training_loop(T):
    rng = np.random.default_rng(1)
    x = T.tensor(rng.standard_normal((16, 4)).astype(np.float32))
    y = T.tensor(rng.standard_normal((16, 1)).astype(np.float32))
    model = T.nn.Sequential(T.nn.Linear(4, 8), T.nn.Tanh(), T.nn.Linear(8, 1))
    optimizer = T.optim.SGD(model.parameters(), lr=0.2)
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
    return model


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    folder = tmp_path_factory.mktemp("history")
    written = {}
    for engine, T in (("nbgrad", nbgrad), ("torch", torch)):
        with nbgrad.record(engine=engine) as trace:
            model = training_loop(T)  # noqa: F841 - names the parameters
        path = folder / f"{engine}.html"
        GraphWidget(trace).save_html(str(path))
        written[engine] = (path, trace.to_dict()["history"])
    return written


VISIBLE_NODE = """(ids) => {
  const graph = document.querySelector('svg[data-role="graph"]') || document.querySelector('svg');
  const area = graph.getBoundingClientRect();
  for (const id of ids) {
    const el = document.querySelector(`[data-node-id="${CSS.escape(id)}"]`);
    if (!el) continue;
    const r = el.getBoundingClientRect();
    const x = (r.left + r.right) / 2, y = (r.top + r.bottom) / 2;
    if (x > area.left && x < area.right && y > area.top && y < area.bottom
        && x < innerWidth && y < innerHeight) return id;
  }
  return null;
}"""


CHART_FACTS = """() => {
  const panel = document.querySelector('[data-role="inspector"]');
  const section = panel.querySelector('[data-role="history"]');
  if (!section) return null;
  const svg = section.querySelector('svg.history-chart');
  const box = (el) => {
    const r = el.getBoundingClientRect();
    return [r.left, r.top, r.right, r.bottom];
  };
  const texts = [...svg.querySelectorAll('text')];
  return {
    panel: box(panel),
    chart: box(svg),
    scale: svg.getAttribute('data-scale'),
    lines: svg.querySelectorAll('g.series path').length,
    xLabel: svg.querySelector('.x-label').textContent,
    yLabel: svg.querySelector('.y-label').textContent,
    xTicks: [...svg.querySelectorAll('.x-tick')].map((t) => t.textContent),
    yTicks: [...svg.querySelectorAll('.y-tick')].map((t) => t.textContent),
    smallestText: Math.min(...texts.map((t) => t.getBoundingClientRect().height)),
    textBoxes: texts.map(box),
    legend: [...section.querySelectorAll('.history-key')].map((k) => k.textContent),
  };
}"""


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=[f"{w}x{h}" for w, h in VIEWPORTS])
@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
def test_clicking_a_parameter_shows_its_chart(browser, pages, engine, viewport):  # noqa: F811
    width, height = viewport
    path, history = pages[engine]
    assert len(history["parameters"]) == 4
    assert all(p["steps"] == list(range(STEPS)) for p in history["parameters"])
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(path.as_uri())
        page.wait_for_selector("[data-role='inspector']")
        page.click('[data-view="forward"]')
        # The view opens on part of a large graph: the first layer's weight is found by typing
        # its name in the search box (Enter brings it on screen), then clicked where it is drawn.
        page.click('[data-role="search"]')
        page.keyboard.type("model.0.weight")
        page.keyboard.press("Enter")
        page.click('[data-role="inspector"]')  # away from the search box
        ids = [i for p in history["parameters"] for i in p["tensors"]]
        target = page.evaluate(VISIBLE_NODE, ids)
        assert target, "no parameter's node is in view"
        node = page.locator(f'[data-node-id="{target}"]').first
        node.click()  # a real click, where the node is drawn
        page.wait_for_selector('[data-role="inspector"] [data-role="history"] svg')
        facts = page.evaluate(CHART_FACTS)
        shot = ARTIFACTS / f"history-{engine}-{width}x{height}.png"
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator('[data-role="history"]').scroll_into_view_if_needed()
        page.screenshot(path=str(shot))
        assert not errors, errors
    finally:
        context.close()

    assert facts["lines"] == 3
    assert facts["legend"] == ["|grad|", "update", "|value|"]
    assert facts["xLabel"] == "training step (backward pass)"
    assert facts["yLabel"] in ("L2 norm", "L2 norm (log scale)")
    # updates (lr * grad) are far below the values: the numbers span decades, the scale is log
    assert facts["scale"] == "log" and facts["yLabel"] == "L2 norm (log scale)"
    assert facts["xTicks"][0] == "1" and int(facts["xTicks"][-1]) <= STEPS
    assert all(re.fullmatch(r"\d+", t) for t in facts["xTicks"])
    assert len(facts["yTicks"]) >= 2
    assert all(re.fullmatch(r"-?[\d.]+(e-?\d+)?", t) for t in facts["yTicks"])
    # inside the panel, and readable: no text under 9 pixels tall
    left, _, right, _ = facts["panel"]
    assert facts["chart"][0] >= left - 0.5 and facts["chart"][2] <= right + 0.5
    for box in facts["textBoxes"]:
        assert box[0] >= left - 0.5 and box[2] <= right + 0.5, box
    assert facts["smallestText"] >= 9, facts["smallestText"]
