"""The graph widget reads well at any size (issue 16), measured in a real browser.

Debian's chromium (Playwright) opens ``save_html`` pages at 1024x768 and 1400x900, and the DOM
is measured (getBoundingClientRect, getScreenCTM, elementFromPoint):

- a small MLP (``Linear(3, 4), ReLU(), Linear(4, 1)``, an MSE loss) opens whole in its backward
  view: every node inside the drawing's viewport, every graph text at least 11 px on screen;
  its forward view, too tall to read whole, opens on the loss, readable;
- the minimap never covers a node (first view, zoomed out, framed on a far node);
- a node selected before the first fit stays selected and on screen after it;
- in an unrolled RNN opened with "expand all", no group title touches a node or another title,
  and nothing is drawn across one.

Every program is recorded twice: by nbgrad's engine and by real PyTorch (torch_recorder).
Screenshots go to test-artifacts/view-*.png. The fixtures are test_widget_browser.py's.
"""

import shutil
import sys

import pytest

import nbgrad
from nbgrad.trace.recorder import Recorder
from nbgrad.trace.source import source_for
from nbgrad.widget import GraphWidget

playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
torch = pytest.importorskip("torch")

from test_widget_browser import ARTIFACTS, browser  # noqa: E402, F401 - a fixture

from nbgrad.trace.torch_recorder import TorchRecorder  # noqa: E402

pytestmark = pytest.mark.skipif(
    shutil.which("chromium") is None, reason="needs Debian's chromium (apt-get install chromium)"
)

MIN_SCREEN_FONT_PX = 11  # js/src/labels.js
SIZES = ((1024, 768), (1400, 900))
ENGINES = {"nbgrad": nbgrad, "torch": torch}


# --- the programs, written once for both engines ----------------------------------------------


def record(program, T):
    """Run ``program(T)`` under the recorder of T's engine; the trace."""
    recorder_class = TorchRecorder if T is torch else Recorder
    recorder = recorder_class(source_for(__file__), base_frame=sys._getframe(), source_kind="file")
    recorder.start()
    variables = program(T)
    return recorder.finish([variables])


def small_mlp(T):
    T.manual_seed(0)
    model = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.ReLU(), T.nn.Linear(4, 1))
    x = T.randn(5, 3)
    target = T.randn(5, 1)
    loss = T.nn.functional.mse_loss(model(x), target)
    loss.backward()
    return locals()


def rnn_cell_loop(T):
    """nn.RNNCell run over 10 steps inside a module, a Linear head."""

    class Unrolled(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = T.nn.RNNCell(3, 4)
            self.head = T.nn.Linear(4, 1)

        def forward(self, xs):
            h = T.zeros(2, 4)
            for x in xs:
                h = self.cell(x, h)
            return self.head(h)

    T.manual_seed(0)
    model = Unrolled()
    xs = T.randn(10, 2, 3)
    target = T.randn(2, 1)
    loss = ((model(xs) - target) ** 2).mean()
    loss.backward()
    return locals()


def hand_written_rnn(T):
    """h = tanh(ih(x) + hh(h)) written out over 10 steps inside a module."""

    class HandRNN(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.ih = T.nn.Linear(3, 4)
            self.hh = T.nn.Linear(4, 4)
            self.out = T.nn.Linear(4, 1)

        def forward(self, xs):
            h = T.zeros(2, 4)
            for x in xs:
                h = T.tanh(self.ih(x) + self.hh(h))
            return self.out(h)

    T.manual_seed(0)
    model = HandRNN()
    xs = T.randn(10, 2, 3)
    target = T.randn(2, 1)
    loss = ((model(xs) - target) ** 2).mean()
    loss.backward()
    return locals()


def farthest_node(trace):
    """The grad_fn node the most next_functions hops from the last pass's root (the first
    step's end of an unrolled loop): found here from the trace's edges, not by the widget."""
    data = trace.to_dict()
    nodes = {n["id"]: n for n in data["nodes"]}
    root = data["passes"][-1]["roots"][0][0]
    depth = {root: 0}
    ring = [root]
    while ring:
        following = []
        for node_id in ring:
            for edge in nodes[node_id]["next"]:
                if edge and edge[0] not in depth:
                    depth[edge[0]] = depth[node_id] + 1
                    following.append(edge[0])
        ring = following
    return max(depth, key=lambda node_id: (depth[node_id], node_id))


# --- measuring the page -------------------------------------------------------------------------

# Every drawn node's box, the minimap's box (null while hidden), the drawing's viewport, the
# smallest graph text on screen (computed font size times the SVG's scale) and the fit note.
_MEASURE_JS = """() => {
  const box = (el) => { const r = el.getBoundingClientRect();
    return { x: r.x, y: r.y, width: r.width, height: r.height }; };
  const svg = document.querySelector("svg.graph");
  const minimap = document.querySelector("[data-role=minimap]");
  let smallest = Infinity;
  for (const t of svg.querySelectorAll("text")) {
    smallest = Math.min(smallest, parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a);
  }
  const note = document.querySelector("[data-role=fit-note]");
  return {
    svg: box(svg),
    nodes: [...svg.querySelectorAll("[data-node-id]")].map((n) =>
      ({ id: n.dataset.nodeId, label: n.dataset.label, cls: n.getAttribute("class"),
         ...box(n.querySelector(".shape")) })),
    minimap: minimap.hidden ? null : box(minimap),
    smallest,
    note: note.hidden ? "" : note.textContent,
    selected: document.querySelector("[data-role=inspector]").getAttribute("data-selected"),
  };
}"""

# Each group title's text box, and for points spread over it, whether the element drawn on top
# there is the title itself (its text or its background): else what is drawn across it.
_TITLES_JS = """() => {
  const box = (el) => { const r = el.getBoundingClientRect();
    return { x: r.x, y: r.y, width: r.width, height: r.height }; };
  const svg = box(document.querySelector("svg.graph"));
  const map = document.querySelector("[data-role=minimap]");
  const mapBox = map.hidden ? null : box(map);
  const inside = (x, y, r) => r && x > r.x && x < r.x + r.width && y > r.y && y < r.y + r.height;
  return [...document.querySelectorAll("svg.graph .group-title")].map((t) => {
    const r = box(t);
    const holder = t.parentNode;
    const across = [];
    // every pixel along two lines through the text: an edge crossing it is hit somewhere
    for (let x = Math.ceil(r.x) + 1; x < r.x + r.width - 1; x++) for (const f of [0.35, 0.65]) {
      const y = r.y + r.height * f;
      if (!inside(x, y, svg) || inside(x, y, mapBox)) continue;
      const top = document.elementFromPoint(x, y);
      if (top && !holder.contains(top)) across.push(top.getAttribute("class") || top.tagName);
    }
    return { text: t.textContent, ...r, across };
  });
}"""


def overlap(a, b):
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


def inside(inner, outer):
    return (
        inner["x"] >= outer["x"] - 0.5
        and inner["y"] >= outer["y"] - 0.5
        and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + 0.5
        and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + 0.5
    )


def open_page(browser, path, size):  # noqa: F811 - the imported fixture's value
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    page = context.new_page()
    page.problems = []
    page.on("pageerror", lambda error: page.problems.append(str(error)))
    page.goto(path.as_uri())
    page.wait_for_selector("[data-node-id]")
    settle(page)
    return context, page


def settle(page):
    """Two animation frames and a little: the first fit, the resize observer's refit."""
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
    page.wait_for_timeout(250)


def assert_minimap_covers_no_node(measured, where):
    if measured["minimap"] is None:
        return
    for node in measured["nodes"]:
        assert not overlap(measured["minimap"], node), f"{where}: the minimap covers {node}"


# --- the tests ----------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_a_small_mlp_opens_whole_and_readable(browser, tmp_path, engine):  # noqa: F811
    trace = record(small_mlp, ENGINES[engine])
    path = GraphWidget(trace).save_html(tmp_path / "mlp.html")
    # MseLoss, 2 x (Addmm, T, 2 AccumulateGrad), Relu: counted from the program, not the page
    expected_nodes = 10
    for size in SIZES:
        context, page = open_page(browser, path, size)
        name = f"{engine}-{size[0]}x{size[1]}"
        m = page.evaluate(_MEASURE_JS)
        assert len(m["nodes"]) == expected_nodes
        for node in m["nodes"]:
            assert inside(node, m["svg"]), f"{name}: {node['label']} off screen: {node}"
        assert m["smallest"] >= MIN_SCREEN_FONT_PX - 0.01, m["smallest"]
        assert m["note"] == ""  # nothing says "showing only a part"
        assert_minimap_covers_no_node(m, name)
        page.screenshot(path=str(ARTIFACTS / f"view-mlp-backward-{name}.png"))

        # the forward view (18 tensors and ops, 12 rows): too tall to read whole at these sizes;
        # it opens readable on the loss, says so, and the minimap covers nothing
        page.locator('[data-view="forward"]').click()
        settle(page)
        m = page.evaluate(_MEASURE_JS)
        assert m["smallest"] >= MIN_SCREEN_FONT_PX - 0.01, m["smallest"]
        loss = [n for n in m["nodes"] if n["label"] == "loss"]
        assert len(loss) == 1 and inside(loss[0], m["svg"]), loss
        if any(not inside(n, m["svg"]) for n in m["nodes"]):
            assert "Showing the loss" in m["note"]
        assert_minimap_covers_no_node(m, f"{name} forward")
        page.screenshot(path=str(ARTIFACTS / f"view-mlp-forward-{name}.png"))
        assert page.problems == []
        context.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_an_early_selection_survives_the_first_fit(browser, tmp_path, engine):  # noqa: F811
    trace = record(rnn_cell_loop, ENGINES[engine])
    far = farthest_node(trace)
    widget = GraphWidget(trace)
    widget.selected = far  # set from Python before the page lays anything out
    path = widget.save_html(tmp_path / "rnn-selected.html")
    for size in SIZES:
        context, page = open_page(browser, path, size)
        name = f"{engine}-{size[0]}x{size[1]}"
        m = page.evaluate(_MEASURE_JS)
        assert m["selected"] == far
        node = next(n for n in m["nodes"] if n["id"] == far)
        assert "selected" in node["cls"].split()
        assert inside(node, m["svg"]), f"{name}: the selected node is off screen: {node}"
        # the graph does not fit whole (else the check above would prove nothing)
        assert "the selected node" in m["note"]
        assert m["smallest"] >= MIN_SCREEN_FONT_PX - 0.01
        assert_minimap_covers_no_node(m, name)
        page.screenshot(path=str(ARTIFACTS / f"view-early-selection-{name}.png"))
        # "fit" frames it again
        page.get_by_role("button", name="fit", exact=True).click()
        m = page.evaluate(_MEASURE_JS)
        assert m["selected"] == far
        assert inside(next(n for n in m["nodes"] if n["id"] == far), m["svg"])
        assert page.problems == []
        context.close()


@pytest.mark.parametrize(
    "engine, program",
    [("nbgrad", hand_written_rnn), ("nbgrad", rnn_cell_loop), ("torch", rnn_cell_loop)],
)
def test_group_titles_are_readable_in_an_expanded_rnn(browser, tmp_path, engine, program):  # noqa: F811
    trace = record(program, ENGINES[engine])
    path = GraphWidget(trace).save_html(tmp_path / "rnn.html")
    for size in SIZES:
        context, page = open_page(browser, path, size)
        page.locator('[data-role="expand-all"]').click()
        settle(page)
        name = f"{engine}-{program.__name__}-{size[0]}x{size[1]}"
        seen = set()
        # the first view, then zoomed out until most titles are on screen
        for zoom_outs in range(4):
            if zoom_outs:
                page.locator('[data-role="zoom-out"]').click()
                settle(page)
            titles = page.evaluate(_TITLES_JS)
            m = page.evaluate(_MEASURE_JS)
            assert_minimap_covers_no_node(m, f"{name} zoomed out {zoom_outs}")
            for i, title in enumerate(titles):
                seen.add(title["text"])
                for node in m["nodes"]:
                    assert not overlap(title, node), f"{name}: {title['text']} on {node['label']}"
                for other in titles[i + 1 :]:
                    assert not overlap(title, other), f"{name}: {title['text']} on {other['text']}"
                assert title["across"] == [], f"{name}: drawn across {title['text']}"
            if zoom_outs == 0:
                page.screenshot(path=str(ARTIFACTS / f"view-rnn-titles-{name}.png"))
        page.screenshot(path=str(ARTIFACTS / f"view-rnn-titles-{name}-zoomed-out.png"))
        # the module groups and the folded loop all had their titles measured
        assert len(seen) >= 3, seen
        assert page.problems == []
        context.close()
