"""Every tutorial's widgets, looked at in a real browser: readable labels at two screen sizes.

For each notebook in notebooks/, JupyterLab runs a copy of it (at 1400x900 and at 1024x768), and
every graph widget it shows is measured from the DOM (getBoundingClientRect, getScreenCTM):

- no node text leaves its box (the box is sized to the text in the page's own font);
- no graph text is smaller than the minimum on screen (11 px), as the widget opens and after
  "fit", in the view it opens in and in the other one.

The last cell of each copy writes every GraphWidget the notebook made to a ``save_html`` page,
and each page is measured the same way at both sizes. Screenshots go to test-artifacts/
(readable-*.png). The fixtures (chromium, JupyterLab) are test_widget_browser.py's.
"""

import json
import os
import re
import shutil
import urllib.request
from pathlib import Path

import pytest

playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
from test_widget_browser import (  # noqa: E402 - after the skip above
    ARTIFACTS,
    ROOT,
    _open_notebook,
    _run_all,
    _start_kernel,
    browser,  # noqa: F401 - a fixture
    lab,  # noqa: F401 - a fixture
)

pytestmark = pytest.mark.skipif(
    shutil.which("chromium") is None, reason="needs Debian's chromium (apt-get install chromium)"
)

MIN_SCREEN_FONT_PX = 11  # js/src/labels.js
SIZES = ((1400, 900), (1024, 768))
TUTORIALS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))

# What one widget looks like, measured: texts outside their node's box, and graph texts drawn
# smaller than the minimum on screen (computed font size times the SVG's on-screen scale).
_MEASURE_JS = """(root) => {
  const rect = (el) => el.getBoundingClientRect();
  const outside = (r, box) => r.left < box.left - 0.5 || r.right > box.right + 0.5
    || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5;
  const overflow = [];
  const small = [];
  for (const node of root.querySelectorAll("svg.graph [data-node-id]")) {
    const box = rect(node.querySelector(".shape"));
    for (const t of node.querySelectorAll("text.label, text.sub")) {
      const r = rect(t);
      if (outside(r, box)) {
        overflow.push({ id: node.dataset.nodeId, text: t.textContent,
                        text_width: r.width, box_width: box.width });
      }
    }
  }
  let smallest = Infinity;
  let texts = 0;
  for (const t of root.querySelectorAll("svg.graph text")) {
    texts += 1;
    const px = parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a;
    smallest = Math.min(smallest, px);
    if (px < MIN - 0.01) small.push({ text: t.textContent, px });
  }
  const svg = rect(root.querySelector("svg.graph"));
  const note = root.querySelector("[data-role=fit-note]");
  return { overflow, small, texts, smallest, svg: [svg.width, svg.height],
           nodes: root.querySelectorAll("[data-node-id]").length,
           note: note.hidden ? "" : note.textContent };
}""".replace("MIN", str(MIN_SCREEN_FONT_PX))


@pytest.fixture(scope="module")
def worktree_kernels():
    """The notebooks' kernels import this checkout's nbgrad (not another one installed)."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), before) if p)
    yield
    if before is None:
        del os.environ["PYTHONPATH"]
    else:
        os.environ["PYTHONPATH"] = before


@pytest.fixture(scope="module")
def lab_all_cells(worktree_kernels, lab):  # noqa: F811 - the imported fixture
    """The JupyterLab server, set to keep every cell on the page (no windowing), so each widget
    can be measured where the notebook puts it."""
    body = json.dumps({"raw": json.dumps({"windowingMode": "none"})}).encode()
    request = urllib.request.Request(
        f"{lab}/lab/api/settings/@jupyterlab/notebook-extension:tracker",
        data=body,
        headers={"Content-Type": "application/json"},
        method="PUT",
    )
    urllib.request.urlopen(request, timeout=30)
    return lab


def _put_notebook(url, path, notebook):
    body = json.dumps({"type": "notebook", "format": "json", "content": notebook}).encode()
    request = urllib.request.Request(
        f"{url}/api/contents/{path}",
        data=body,
        headers={"Content-Type": "application/json"},
        method="PUT",
    )
    urllib.request.urlopen(request, timeout=30)


def _cell(source):
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": source,
    }


def _copy_with_saving(name, out_dir):
    """The tutorial with a first cell noting the GraphWidgets that exist and a last one writing
    every GraphWidget made since to a save_html page in out_dir."""
    notebook = json.loads((ROOT / "notebooks" / name).read_text())
    for cell in notebook["cells"]:
        cell.pop("id", None)
        if cell["cell_type"] == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    first = (
        "import gc as _gc, nbgrad as _nbgrad\n"
        "from nbgrad.widget import GraphWidget as _GraphWidget\n"
        "_before = {id(w) for w in _gc.get_objects() if isinstance(w, _GraphWidget)}\n"
    )
    last = (
        "_made = [w for w in _gc.get_objects()\n"
        "         if isinstance(w, _GraphWidget) and id(w) not in _before]\n"
        "_made.sort(key=lambda w: w.model_id)\n"
        f"_out = {str(out_dir)!r}\n"
        "for _i, _w in enumerate(_made):\n"
        "    _w.save_html(f'{_out}/widget-{_i}.html')\n"
        "print('SAVED', len(_made), _nbgrad.__file__)\n"
    )
    notebook["cells"] = [_cell(first), *notebook["cells"], _cell(last)]
    notebook["nbformat_minor"] = max(notebook.get("nbformat_minor", 5), 5)
    for i, cell in enumerate(notebook["cells"]):
        cell["id"] = f"c{i}"
    return notebook


def _run_all_cells(page):
    """Run All, again if the notebook did not start (a menu clicked before the kernel was
    ready does nothing)."""
    for _ in range(4):
        _run_all(page)
        try:
            page.wait_for_function(
                "() => [...document.querySelectorAll('.jp-InputArea-prompt')]"
                ".some(p => /\\[(\\*|\\d+)\\]/.test(p.textContent))",
                timeout=15_000,
            )
            return
        except playwright_api.TimeoutError:
            page.keyboard.press("Escape")
    raise AssertionError("Run All did not start the notebook")


def _check_widget(widget, where, shots):
    """Measure a widget as it opened and after fit, in both views; screenshot each state."""
    problems = []
    views = [v for v in ("backward", "forward") if widget.locator(f'[data-view="{v}"]').count()]
    opened = widget.locator(".view-button.active").get_attribute("data-view")
    order = [opened] + [v for v in views if v != opened]
    for view in order:
        if view != opened:
            widget.locator(f'[data-view="{view}"]').click()
        widget.page.wait_for_timeout(150)
        for moment in ("open", "fit"):
            if moment == "fit":
                widget.locator('[data-role="fit"]').click()
                widget.page.wait_for_timeout(100)
            found = widget.evaluate(_MEASURE_JS)
            label = f"{where} {view} {moment}"
            if found["nodes"] == 0:
                continue  # this trace has nothing in that view (forward-only recordings)
            if found["overflow"]:
                problems.append(f"{label}: labels leave their boxes: {found['overflow'][:5]}")
            if found["small"]:
                problems.append(
                    f"{label}: text under {MIN_SCREEN_FONT_PX} px: {found['small'][:5]}"
                )
            shots.append((label, found))
            widget.screenshot(path=str(ARTIFACTS / f"readable-{where}-{view}-{moment}.png"))
    if opened != order[-1]:
        widget.locator(f'[data-view="{opened}"]').click()
    return problems


@pytest.mark.parametrize("name", TUTORIALS)
def test_every_tutorial_widget_reads_at_both_sizes(lab_all_cells, browser, tmp_path, name):  # noqa: F811
    ARTIFACTS.mkdir(exist_ok=True)
    stem = name[:2]
    path = f"readable-{name}"
    _put_notebook(lab_all_cells, path, _copy_with_saving(name, tmp_path))
    _start_kernel(lab_all_cells, path)
    problems = []
    shots = []
    for width, height in SIZES:
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda error, errors=errors: errors.append(str(error)))
        try:
            _open_notebook(page, f"{lab_all_cells}/lab/tree/{path}?reset")
            _run_all_cells(page)
            saved = page.locator(".jp-OutputArea-output", has_text=re.compile(r"^SAVED \d+"))
            saved.wait_for(timeout=240_000)
            text = saved.inner_text()
            assert str(ROOT / "nbgrad") in text, f"the kernel imported another nbgrad: {text}"
            widgets = page.locator(".nbgrad-widget")
            count = widgets.count()
            assert count > 0, f"{name} showed no widget"
            for i in range(count):
                widget = widgets.nth(i)
                widget.scroll_into_view_if_needed()
                widget.locator("[data-node-id]").first.wait_for(timeout=30_000)
                page.wait_for_timeout(300)  # the first framing waits for the page's layout
                problems += _check_widget(widget, f"lab-{stem}-{i}-{width}x{height}", shots)
        except Exception:
            page.screenshot(
                path=str(ARTIFACTS / f"readable-failure-lab-{stem}-{width}x{height}.png")
            )
            raise
        finally:
            context.close()
        assert errors == [], errors

    pages = sorted(Path(tmp_path).glob("widget-*.html"), key=lambda p: int(p.stem.split("-")[1]))
    assert pages, f"{name}: no GraphWidget was saved"
    for width, height in SIZES:
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda error, errors=errors: errors.append(str(error)))
        for i, saved_page in enumerate(pages):
            page.goto(saved_page.as_uri())
            widget = page.locator(".nbgrad-widget")
            widget.locator("[data-node-id]").first.wait_for(timeout=30_000)
            page.wait_for_timeout(300)
            problems += _check_widget(widget, f"html-{stem}-{i}-{width}x{height}", shots)
        context.close()
        assert errors == [], errors
    (ARTIFACTS / f"readable-{stem}.json").write_text(json.dumps(shots, indent=1))
    assert problems == [], "\n".join(problems)


# --- finding your way, in a saved page --------------------------------------------------------


def _record_attention():
    """Self-attention written out, with the reshapes a transformer block makes."""
    import nbgrad
    import nbgrad as torch

    torch.manual_seed(0)
    x = torch.randn(2, 4, 8)
    w_q, w_k, w_v = (torch.randn(8, 8, requires_grad=True) for _ in range(3))
    with nbgrad.record() as trace:
        q = (x @ w_q).view(2, 4, 2, 4).transpose(1, 2)
        k = (x @ w_k).view(2, 4, 2, 4).transpose(1, 2)
        v = (x @ w_v).view(2, 4, 2, 4).transpose(1, 2)
        attention = torch.softmax(q @ k.transpose(-2, -1) / 2.0, dim=-1)
        out = (attention @ v).transpose(1, 2).reshape(2, 4, 8)
        loss = out.pow(2).mean()
        loss.backward()
    return trace


SHAPE_ONLY = re.compile(
    r"^(View|UnsafeView|Reshape|ReshapeAlias|Expand|Clone|Transpose|T|Permute|Unsqueeze|Squeeze)Backward\d*$"
)


def test_hide_reshapes_search_minimap_legend_and_height(tmp_path, browser):  # noqa: F811
    from nbgrad.widget import GraphWidget

    path = GraphWidget(_record_attention()).save_html(tmp_path / "attention.html")
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.as_uri())
    page.wait_for_selector("[data-node-id]")
    labels = lambda: page.locator("[data-node-id]").evaluate_all(
        "els => els.map(e => e.dataset.label)"
    )  # noqa: E731
    before = labels()
    assert any(SHAPE_ONLY.match(label) for label in before)
    assert (
        "Arrows: from the loss towards the leaves"
        in page.locator('[data-role="legend"]').inner_text()
    )

    # hide reshapes: no shape-only node left; softmax still reaches the matmuls below it
    page.locator('[data-role="hide-shapes"]').check()
    after = labels()
    assert not any(SHAPE_ONLY.match(label) for label in after), after
    assert len(after) < len(before)
    assert "SoftmaxBackward0" in after
    edges = page.locator(".edge").count()
    assert edges >= len(after) - 1  # still one connected graph
    page.screenshot(path=str(ARTIFACTS / "readable-attention-hide-reshapes.png"))

    # search: every match highlighted, stepped through with Enter
    search = page.locator('[data-role="search"]')
    search.fill("AccumulateGrad")
    assert page.locator(".node.match").count() == 3
    search.press("Enter")
    assert page.locator('[data-role="search-count"]').inner_text() == "1 of 3"
    search.press("Enter")
    assert page.locator('[data-role="search-count"]').inner_text() == "2 of 3"
    assert page.locator(".node.match-current").count() == 1
    assert "AccumulateGrad" in page.locator('[data-role="inspector"] .title').inner_text()

    # the minimap moves the view; the foot resizes the widget
    page.locator('[data-role="hide-shapes"]').uncheck()
    minimap = page.locator('[data-role="minimap"]')
    transform = lambda: page.locator("g.viewport").get_attribute("transform")  # noqa: E731
    if minimap.is_visible():
        box = minimap.bounding_box()
        start = transform()
        page.mouse.click(box["x"] + box["width"] * 0.2, box["y"] + box["height"] * 0.9)
        assert transform() != start
    widget = page.locator(".nbgrad-widget")
    height = widget.bounding_box()["height"]
    handle = page.locator('[data-role="resize"]').bounding_box()
    page.mouse.move(handle["x"] + handle["width"] / 2, handle["y"] + 3)
    page.mouse.down()
    page.mouse.move(handle["x"] + handle["width"] / 2, handle["y"] + 123, steps=5)
    page.mouse.up()
    assert abs(widget.bounding_box()["height"] - (height + 120)) < 2
    page.screenshot(path=str(ARTIFACTS / "readable-attention-taller.png"))

    # the measuring script sees what it is there to see: a text too long, a zoom too small
    assert widget.evaluate(_MEASURE_JS)["overflow"] == []
    widget.evaluate(
        "w => { w.querySelector('svg.graph [data-node-id] text.label')"
        ".textContent = 'x'.repeat(80); }"
    )
    assert len(widget.evaluate(_MEASURE_JS)["overflow"]) == 1
    assert widget.evaluate(_MEASURE_JS)["small"] == []
    for _ in range(3):
        page.locator('[data-role="zoom-out"]').click()
    assert widget.evaluate(_MEASURE_JS)["small"]
    context.close()
    assert errors == []
