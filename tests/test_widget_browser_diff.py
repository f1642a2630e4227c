"""nbgrad.diff's widget in a real browser (Debian's chromium, Playwright): a ``save_html`` page of
a diff, at 1024x768 and 1400x900. The legend can be read (each key whole, at a readable size),
the statuses have their colours, real clicks open the inspector on both sides of a node, and a
diff of the same cell on both engines is "same" on every node. Screenshots go to
test-artifacts/diff-*.png.
"""

import pytest

import nbgrad
from tests.test_diff import record_mlp
from tests.test_widget_browser import ARTIFACTS, browser, playwright_api  # noqa: F401
from tests.test_widget_browser_inspector import (
    MEASURE,
    _click,
    _helper_words,
    _load_full_arrays,
    _nodes_to_click,
)

torch = pytest.importorskip("torch")  # both engines' traces are compared

VIEWPORTS = [(1024, 768), (1400, 900)]
# the fills and strokes of style.css's diff section (rgb, as the browser computes them)
FILLS = {
    "a": "rgb(254, 226, 226)",
    "b": "rgb(220, 252, 231)",
    "differs": "rgb(254, 243, 199)",
    "same": "rgb(249, 250, 251)",
}
STROKE_B = "rgb(21, 128, 61)"


@pytest.fixture(params=VIEWPORTS, ids=lambda v: f"{v[0]}x{v[1]}")
def sized_page(request, browser):  # noqa: F811
    width, height = request.param
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.problems = []
    page.on("pageerror", lambda error: page.problems.append(str(error)))
    page.size = (width, height)
    yield page
    context.close()


def _open(page, path):
    page.goto(path.as_uri())
    page.wait_for_selector("[data-node-id]")
    page.wait_for_timeout(200)  # the first fit runs on the next animation frame


def _fill(page, node_id):
    return page.evaluate(
        "(id) => getComputedStyle(document.querySelector(`[data-node-id='${id}'] .shape`)).fill",
        node_id,
    )


def test_a_changed_activation(tmp_path, sized_page):
    page = sized_page
    d = nbgrad.diff(
        record_mlp("nbgrad", "sigmoid"), record_mlp("nbgrad", "relu"), labels=("sigmoid", "relu")
    )
    _open(page, d.save_html(tmp_path / "diff.html"))
    width, height = page.size

    # the legend: every key whole and at least 11px, with the labels and the counts
    legend = page.locator('[data-role="diff-legend"]')
    assert legend.is_visible()
    keys = legend.locator(".diff-key")
    texts = [keys.nth(i).inner_text() for i in range(keys.count())]
    assert texts == [
        "only in sigmoid (2)",
        "only in relu (2)",
        f"values differ ({len(d.changed)})",
        f"same ({len(d.same)})",
    ]
    for i in range(keys.count()):
        box = keys.nth(i).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, texts[i]
        assert keys.nth(i).evaluate("el => el.scrollWidth <= el.clientWidth + 1")
        assert keys.nth(i).evaluate("el => parseFloat(getComputedStyle(el).fontSize)") >= 11

    # the colours of each status, on the nodes of the backward view
    data = d.to_dict()
    status = data["diff"]["records"]
    by_name = {n["name"]: n["id"] for n in data["nodes"]}
    assert _fill(page, by_name["SigmoidBackward0"]) == FILLS["a"]
    assert _fill(page, by_name["ReluBackward0"]) == FILLS["b"]
    assert _fill(page, by_name["MeanBackward0"]) == FILLS["same"]
    for node in data["nodes"]:
        assert _fill(page, node["id"]) == FILLS[status[node["id"]]["status"]], node["name"]
    relu = by_name["ReluBackward0"]
    edge = page.locator(f'path.edge[data-to="{relu}"]')
    assert edge.count() == 1
    assert edge.evaluate("el => getComputedStyle(el).stroke") == STROKE_B

    # a real click on the node only in B: its section says so, with B's gradient
    page.locator(f'[data-node-id="{relu}"]').click()
    section = page.locator('[data-role="diff-section"]')
    assert section.locator(".diff-headline").inner_text() == "only in relu"
    assert section.locator('.diff-side[data-side="b"]').first.is_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"diff-relu-{width}x{height}.png"))

    # a node in both whose gradients differ: both sides, labelled, and the largest difference
    w1 = d.entry("AccumulateGrad(w1)")
    page.locator(f'[data-node-id="{w1.id}"]').click()
    section = page.locator('[data-role="diff-section"]')
    headline = section.locator(".diff-headline").inner_text()
    assert headline == f"values differ: largest |difference| {w1.difference:.3g} in gradient in"
    item = section.locator(".diff-item.differs").first
    assert item.locator('.diff-side[data-side="a"] .key').inner_text() == "sigmoid"
    assert item.locator('.diff-side[data-side="b"] .key').inner_text() == "relu"
    # the inspector never needs a sideways scroll of its own
    panel = page.locator('[data-role="inspector"]')
    assert panel.evaluate("el => el.scrollWidth <= el.clientWidth + 1")
    page.screenshot(path=str(ARTIFACTS / f"diff-w1-{width}x{height}.png"))

    # the forward view: the ops only in one trace, and h, whose value differs
    page.locator('[data-view="forward"]').click()
    page.wait_for_timeout(100)
    ops = {o["op"]: o["id"] for o in data["ops"]}
    assert _fill(page, ops["sigmoid"]) == FILLS["a"]
    assert _fill(page, ops["relu"]) == FILLS["b"]
    page.screenshot(path=str(ARTIFACTS / f"diff-forward-{width}x{height}.png"))
    assert page.problems == []


def test_nbgrad_against_torch_is_same_everywhere(tmp_path, sized_page):
    page = sized_page
    d = nbgrad.diff(record_mlp("nbgrad"), record_mlp("torch"))
    _open(page, d.save_html(tmp_path / "engines.html"))
    nodes = page.locator("g.node")
    assert nodes.count() == len(d.trace_a.nodes)
    for i in range(nodes.count()):
        assert "diff-same" in nodes.nth(i).get_attribute("class").split()
    keys = page.locator('[data-role="diff-legend"] .diff-key')
    assert keys.nth(0).inner_text() == "only in nbgrad (0)"
    assert keys.nth(1).inner_text() == "only in torch (0)"
    assert keys.nth(2).inner_text() == "values differ (0)"
    page.locator('[data-label="MeanBackward0"]').click()
    section = page.locator('[data-role="diff-section"]')
    assert section.locator(".diff-headline").inner_text() == (
        "the same in nbgrad and torch (within the tolerance)"
    )
    # one value per quantity, for both: MeanBackward0 received 1 (d loss / d loss)
    received = section.locator('.diff-item[data-what="gradient in"]')
    assert received.locator(".diff-what").inner_text() == "gradient in equal"
    assert received.locator('.diff-side[data-side="both"] .key').inner_text() == "nbgrad = torch"
    assert received.locator('.diff-side[data-side="both"] .val').inner_text() == "1."
    assert section.evaluate("el => el.scrollWidth <= el.clientWidth + 1")
    width, height = page.size
    page.screenshot(path=str(ARTIFACTS / f"diff-engines-{width}x{height}.png"))
    assert page.problems == []


def _network_cell(engine, activation):
    """A Sequential of three Linear layers (16 wide, so its arrays travel as buffers) with
    ``activation`` between them, its loss and backward, recorded."""
    T = nbgrad if engine == "nbgrad" else torch
    T.manual_seed(0)
    net = T.nn.Sequential(
        T.nn.Linear(8, 16), activation(), T.nn.Linear(16, 16), activation(), T.nn.Linear(16, 1)
    )
    x, y = T.ones(32, 8), T.zeros(32, 1)
    with nbgrad.record(engine=engine) as trace:
        loss = ((net(x) - y) ** 2).mean()
        loss.backward()
    return trace


@pytest.mark.parametrize("engine", ["nbgrad", "torch"])
def test_the_inspector_reads_whole_on_every_node(tmp_path, sized_page, engine):
    # the checks test_widget_browser_inspector.py makes on every tutorial's widget: nothing runs
    # past the panel's edge outside a box that scrolls sideways, no number split over two lines
    page = sized_page
    T = nbgrad if engine == "nbgrad" else torch
    before = _network_cell(engine, T.nn.Sigmoid)
    after = _network_cell(engine, T.nn.ReLU)
    d = nbgrad.diff(before, after, labels=("sigmoid", "relu"))
    assert [e.kind for e in d.removed] == ["op", "op", "node", "node"]
    _open(page, d.save_html(tmp_path / "network.html"))
    words = _helper_words()
    problems = []
    for view in ("backward", "forward"):
        page.click(f'[data-view="{view}"]')
        for node_id in _nodes_to_click(page):
            _click(page, node_id)
            _load_full_arrays(page)
            assert page.locator('[data-role="diff-section"]').count() == 1, node_id
            problems += [f"{view} {node_id}: {p}" for p in page.evaluate(MEASURE, [words])]
    assert not problems, "\n".join(problems[:40])
    width, height = page.size
    page.screenshot(path=str(ARTIFACTS / f"diff-network-{engine}-{width}x{height}.png"))
    assert page.problems == []
