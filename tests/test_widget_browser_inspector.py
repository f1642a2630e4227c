"""The inspector as a learner reads it, in a real browser (Debian's chromium, Playwright).

Every tutorial notebook runs in a kernel (nbclient) with one extra cell that keeps each graph
widget it shows; each widget is written with ``save_html`` and opened at 1024x768 and 1400x900.
Nodes are clicked in both views (every node of a small graph, a sample of each kind in a large
one), and the DOM is measured after each click:

- nothing in the inspector runs past its right edge unless it is inside a box that scrolls
  sideways (a matrix, a formula, a source line): the panel itself never needs a sideways scroll;
- no number is split across two lines;
- no formula shows program text (``if``, ``else``, ``==``) or a helper name of formula_math.

Screenshots of one Function node per widget go to test-artifacts/inspector-*.png.
"""

import os
import re
from pathlib import Path

import pytest

from nbgrad.trace.readable import MATH_FUNCTIONS, helper_names
from tests.test_widget_browser import ARTIFACTS, ROOT, browser, playwright_api  # noqa: F401

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
VIEWPORTS = [(1024, 768), (1400, 900)]
SAMPLE_PER_KIND = 4  # nodes clicked per node name in a large graph
SMALL_GRAPH = 40  # drawn nodes: every one is clicked

KEEP_WIDGETS = """\
import nbgrad.widget as _nbgrad_widget
_kept_widgets = []
_original_init = _nbgrad_widget.GraphWidget.__init__
def _keeping_init(self, *args, **kwargs):
    _original_init(self, *args, **kwargs)
    _kept_widgets.append(self)
_nbgrad_widget.GraphWidget.__init__ = _keeping_init
"""

SAVE_WIDGETS = """\
for _i, _w in enumerate(_kept_widgets):
    _w.save_html({folder!r} + f"/{{_i:02d}}.html")
"""


@pytest.fixture(scope="module")
def tutorial_pages(tmp_path_factory):
    """{notebook stem: [html paths of its widgets, in order]}."""
    pages = {}
    # the kernels import this checkout's nbgrad (the one under test), whatever is installed
    saved_path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), saved_path]))
    try:
        for path in NOTEBOOKS:
            _execute_keeping_widgets(path, tmp_path_factory, pages)
    finally:
        if saved_path is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved_path
    return pages


def _execute_keeping_widgets(path, tmp_path_factory, pages):
    if True:
        folder = tmp_path_factory.mktemp(path.stem)
        nb = nbformat.read(path, as_version=4)
        nb.cells.insert(0, nbformat.v4.new_code_cell(KEEP_WIDGETS))
        nb.cells.append(nbformat.v4.new_code_cell(SAVE_WIDGETS.format(folder=str(folder))))
        client = nbclient.NotebookClient(
            nb,
            kernel_name="python3",
            timeout=600,
            allow_errors=True,  # the cells tagged raises-exception raise on purpose
            resources={"metadata": {"path": str(path.parent)}},
        )
        client.execute()
        pages[path.stem] = sorted(Path(folder).glob("*.html"))


# What the page measures after each click (returns a list of problems, empty when all is well).
MEASURE = """
([programWords]) => {
  const panel = document.querySelector('[data-role="inspector"]');
  const problems = [];
  const box = panel.getBoundingClientRect();
  if (panel.scrollWidth > panel.clientWidth + 1)
    problems.push(`the panel scrolls sideways: ${panel.scrollWidth} > ${panel.clientWidth}`);
  const scrolls = (el) => ["auto", "scroll"].includes(getComputedStyle(el).overflowX);
  for (const el of panel.querySelectorAll("*")) {
    let up = el.parentElement;
    while (up && up !== panel && !scrolls(up)) up = up.parentElement;
    if (up !== panel) continue; // inside a box of its own that scrolls sideways
    const r = el.getBoundingClientRect();
    if (r.width && r.right > box.right + 1)
      problems.push(
        `${el.tagName.toLowerCase()}.${el.getAttribute("class") || ""} runs ` +
          `${Math.round(r.right - box.right)} px past the panel: ` +
          (el.textContent || "").slice(0, 60),
      );
  }
  const number = /^[-−]?(\\d+\\.?\\d*|\\.\\d+)(e[-+]?\\d+)?$|^(nan|inf|-inf)$/;
  const walker = document.createTreeWalker(panel, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const text = walker.currentNode.textContent.trim();
    if (!text || !number.test(text)) continue;
    const range = document.createRange();
    range.selectNodeContents(walker.currentNode);
    const rects = [...range.getClientRects()].filter((r) => r.width > 0);
    const tops = new Set(rects.map((r) => Math.round(r.top)));
    if (tops.size > 1) problems.push(`the number ${text} is split over ${tops.size} lines`);
  }
  for (const el of panel.querySelectorAll(".formula-plain, .formula-math")) {
    const text = el.textContent;
    const words = new Set(text.match(/[A-Za-z_][A-Za-z0-9_]*/g) || []);
    for (const bad of ["if", "else"])
      if (words.has(bad)) problems.push(`a formula says "${bad}": ${text}`);
    if (text.includes("==")) problems.push(`a formula says "==": ${text}`);
    for (const word of words)
      if (programWords.includes(word)) problems.push(`a formula shows the helper ${word}: ${text}`);
  }
  return problems;
}
"""


def _helper_words():
    """formula_math's words that must not reach a formula: not the math ones (exp, log, sin),
    nor the Tensor methods of the same name, which a program's names may contain
    (``x.reshape(2, 3)`` names a tensor)."""
    import nbgrad

    return sorted(helper_names() - set(MATH_FUNCTIONS) - set(dir(nbgrad.Tensor)))


def _nodes_to_click(page):
    """Ids of the drawn nodes: all of a small graph, else a few of each label."""
    nodes = page.eval_on_selector_all(
        "[data-node-id]",
        "els => els.map(e => [e.getAttribute('data-node-id'), e.getAttribute('data-label') || ''])",
    )
    if len(nodes) <= SMALL_GRAPH:
        return [node_id for node_id, _ in nodes]
    chosen, per_label = [], {}
    for node_id, label in nodes:
        kind = re.sub(r"[#\d]+$", "", label)
        if per_label.get(kind, 0) < SAMPLE_PER_KIND:
            per_label[kind] = per_label.get(kind, 0) + 1
            chosen.append(node_id)
    return chosen


def _click(page, node_id):
    page.evaluate(
        """(id) => document.querySelector(`[data-node-id="${CSS.escape(id)}"]`)
              .dispatchEvent(new MouseEvent("click", { bubbles: true }))""",
        node_id,
    )


def _load_full_arrays(page):
    """Press every "load full array" button of the panel, and wait until every array is shown
    (save_html carries the arrays as bytes: the page decodes them when shown)."""
    page.evaluate(
        """() => { const panel = document.querySelector('[data-role="inspector"]');
                   panel.querySelectorAll('button.load-full').forEach((b) => b.click()); }"""
    )
    page.wait_for_function(
        "() => !document.querySelector('[data-role=\"inspector\"] .load-status.loading')"
    )


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=[f"{w}x{h}" for w, h in VIEWPORTS])
@pytest.mark.parametrize("stem", [p.stem for p in NOTEBOOKS])
def test_every_tutorial_inspector_reads_whole(browser, tutorial_pages, stem, viewport):  # noqa: F811
    width, height = viewport
    pages = tutorial_pages[stem]
    assert pages, f"{stem} showed no graph widget"
    words = _helper_words()
    problems = []
    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        for number, html in enumerate(pages):
            page.goto(html.as_uri())
            page.wait_for_selector("[data-role='inspector']")
            shot_taken = False
            for view in ("backward", "forward"):
                page.click(f'[data-view="{view}"]')
                for node_id in _nodes_to_click(page):
                    _click(page, node_id)
                    _load_full_arrays(page)
                    found = page.evaluate(MEASURE, [words])
                    problems += [f"{stem} widget {number} {view} {node_id}: {p}" for p in found]
                    has_formula = page.locator('[data-role="inspector"] .formula-math').count()
                    if view == "backward" and has_formula and not shot_taken:
                        page.screenshot(
                            path=str(
                                ARTIFACTS / f"inspector-{stem}-{number:02d}-{width}x{height}.png"
                            )
                        )
                        shot_taken = True
        assert not errors, errors
    finally:
        context.close()
    assert not problems, "\n".join(problems[:40]) + f"\n({len(problems)} problems)"


def test_the_issue_examples_in_notebook_1(browser, tutorial_pages):  # noqa: F811
    """AddmmBackward0's saved matrix scrolls whole, its sizes read (5, 3), PowBackward0's
    formula is 2 · (…) · ∂L/∂…, TBackward0 shows a transpose, at 1024x768."""
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    try:
        page = context.new_page()
        texts = {}
        for html in tutorial_pages["01_what_backward_does"]:
            page.goto(html.as_uri())
            page.wait_for_selector("[data-role='inspector']")
            page.click('[data-view="backward"]')
            for label in ("AddmmBackward0", "PowBackward0", "TBackward0", "SubBackward0"):
                ids = page.eval_on_selector_all(
                    f'[data-label^="{label}"]',
                    "els => els.map(e => e.getAttribute('data-node-id'))",
                )
                if ids and label not in texts:
                    _click(page, ids[0])
                    panel = page.locator('[data-role="inspector"]')
                    texts[label] = panel.inner_text()
                    if label == "AddmmBackward0":
                        mat1 = panel.locator('[data-saved="mat1"] .matrix-scroll')
                        assert mat1.count() == 1
                        # the whole matrix is in a box that scrolls to its last column
                        whole = mat1.evaluate(
                            "el => [el.scrollWidth, el.clientWidth, el.querySelectorAll('td').length]"  # noqa: E501
                        )
                        mat1.evaluate("el => { el.scrollLeft = el.scrollWidth; }")
                        last = panel.locator('[data-saved="mat1"] tr').first.locator("td").last
                        assert last.is_visible()
                        box, cell = mat1.bounding_box(), last.bounding_box()
                        assert cell["x"] + cell["width"] <= box["x"] + box["width"] + 1, (
                            whole,
                            box,
                            cell,
                        )
                        page.screenshot(
                            path=str(ARTIFACTS / "inspector-addmm-mat1-scrolled-1024x768.png")
                        )
        assert re.search(r"_saved_mat1_sym_sizes\s*\(\d+, \d+\)", texts["AddmmBackward0"])
        assert "5. 3." not in texts["AddmmBackward0"]
        assert re.search(r"∂L/∂\S.* = 2 · \(.*\) · ∂L/∂", texts["PowBackward0"])
        assert "ᵀ" in texts["TBackward0"] and "matrix_t" not in texts["TBackward0"]
        assert "= 1 = 1" not in texts["SubBackward0"]
    finally:
        context.close()
