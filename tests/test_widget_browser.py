"""The graph widget end to end, in a real browser: Debian's chromium driven by Playwright.

JupyterLab runs headless on 127.0.0.1 (a free port, no token, a temporary directory); the test
opens a notebook, runs a ``%%autograd`` cell, clicks nodes and checks what the inspector says.
A ``save_html`` file is opened and clicked the same way. Screenshots go to test-artifacts/.

scripts/test installs what this needs (chromium from apt, playwright from pip); without them the
tests are skipped with the reason.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import nbgrad
from nbgrad.widget import GraphWidget

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
XSS = "<img src=x onerror=alert(1)>"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
pytestmark = pytest.mark.skipif(
    shutil.which("chromium") is None, reason="needs Debian's chromium (apt-get install chromium)"
)


# --- a browser and a JupyterLab ------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    if not (ROOT / "nbgrad" / "static" / "widget.js").is_file():
        pytest.fail("the widget is not built: run `npm ci && npm run build` in js/")
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.problems = []
    page.dialogs = []
    page.on("pageerror", lambda error: page.problems.append(f"{error}\n{error.stack}"))

    def on_dialog(dialog):
        page.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    yield page
    context.close()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _notebook(cells):
    return {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"cell{i}",
                "metadata": {},
                "outputs": [],
                "source": source,
            }
            for i, source in enumerate(cells)
        ],
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


# The magic shows the widget once its owner switches it to nbgrad.widget.display_trace; until
# then the cell after it displays the widget itself.
SHOW_IF_NEEDED = """\
import inspect, nbgrad, nbgrad.magic
from nbgrad.widget import GraphWidget, display_trace
if "display_trace" not in inspect.getsource(nbgrad.magic.show_trace):
    display_trace(nbgrad.last_trace())
"""

CELLS = [
    "%load_ext nbgrad",
    """%%autograd
import nbgrad as torch
a = torch.tensor(2.0, requires_grad=True)
b = torch.tensor(3.0, requires_grad=True)
c = a + b
d = torch.tensor(4.0, requires_grad=True)
e = c * d
e.backward()""",
    SHOW_IF_NEEDED,
    """%%autograd --no-show
globals()["<img src=x onerror=alert(1)>"] = torch.arange(300.0).reshape(15, 20).requires_grad_()
loss = (globals()["<img src=x onerror=alert(1)>"] * 2).sum()
loss.backward()""",
    "w = GraphWidget(nbgrad.last_trace(), view='forward')\nw",
    'print("SYNC", repr(w.selected), w.step)',
    "import json\n"
    "tensors = json.loads(w.trace_json)['tensors']\n"
    "w.selected = next(t['id'] for t in tensors if t['name'] == 'loss')",
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 serving a notebook made for these tests."""
    home = tmp_path_factory.mktemp("lab")
    notebooks = home / "notebooks"
    notebooks.mkdir()
    (notebooks / "widget.ipynb").write_text(json.dumps(_notebook(CELLS)))
    (notebooks / "notebook7.ipynb").write_text(json.dumps(_notebook(CELLS[:3])))
    shutil.copytree(ROOT / "notebooks", notebooks / "tutorials")
    port = _free_port()
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(home / ".config"),
        JUPYTER_RUNTIME_DIR=str(home / ".runtime"),
        IPYTHONDIR=str(home / ".ipython"),
        JUPYTER_DATA_DIR=str(home / ".data"),  # no trust database: every notebook is untrusted
        JUPYTERLAB_SETTINGS_DIR=str(home / ".settings"),
    )
    # no "get notified about Jupyter news?" toast over the screenshots
    settings = home / ".settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    command = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        f"--port={port}",
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.port_retries=0",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        "--ServerApp.disable_check_xsrf=True",
        f"--ServerApp.root_dir={notebooks}",
        f"--LabApp.workspaces_dir={home / '.workspaces'}",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",  # no look-ups on PyPI
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    log = open(home / "server.log", "w")  # noqa: SIM115 - closed below
    server = subprocess.Popen(command, cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status", timeout=2)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail("JupyterLab did not start:\n" + (home / "server.log").read_text())
                time.sleep(0.3)
        # start the notebooks' kernels now, so the pages open without asking which kernel to use
        for name in ("widget.ipynb", "notebook7.ipynb"):
            _start_kernel(url, name)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def _open_notebook(page, url):
    page.goto(url)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    # JupyterLab may still ask which kernel to use, although the session exists: the default
    select = page.locator(".jp-Dialog").get_by_role("button", name="Select", exact=True)
    try:
        select.wait_for(timeout=3_000)
        select.click()
    except playwright_api.TimeoutError:
        pass
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)


def put_notebook(url, name, cells):
    """Write a notebook of ``cells`` into the server's folder and start its kernel."""
    body = {"type": "notebook", "format": "json", "content": _notebook(cells)}
    request = urllib.request.Request(
        f"{url}/api/contents/{name}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="PUT",
    )
    urllib.request.urlopen(request, timeout=30)
    _start_kernel(url, name)


def _start_kernel(url, path):
    """A session for the notebook at ``path``, so the page opens without asking for a kernel."""
    session = {"path": path, "type": "notebook", "kernel": {"name": "python3"}}
    request = urllib.request.Request(
        f"{url}/api/sessions",
        data=json.dumps(session).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    urllib.request.urlopen(request, timeout=30)


def _run_all(page):
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name=re.compile("^Run All Cells")).click()


def _inspector(widget):
    return widget.locator('[data-role="inspector"]')


# --- in JupyterLab --------------------------------------------------------------------------------


def test_widget_in_jupyterlab(lab, page):
    try:
        _check_widget_in_jupyterlab(lab, page)
    except Exception:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "failure-jupyterlab.png"))
        raise


def _check_widget_in_jupyterlab(lab, page):
    _open_notebook(page, f"{lab}/lab/tree/widget.ipynb")
    _run_all(page)
    sync_output = page.locator(".jp-OutputArea-output", has_text="SYNC")
    sync_output.wait_for(timeout=40_000)

    widgets = page.locator(".nbgrad-widget")
    widgets.first.wait_for(timeout=30_000)
    widget = widgets.first
    # e = (a + b) * d: the backward graph of the %%autograd cell
    nodes = widget.locator("[data-node-id]")
    labels = sorted(nodes.evaluate_all("els => els.map(e => e.dataset.label)"))
    assert labels == [
        "AccumulateGrad",
        "AccumulateGrad",
        "AccumulateGrad",
        "AddBackward0",
        "MulBackward0",
    ]

    # a Function node: its saved buffers with their values, its formulas, its gradients
    widget.locator('[data-label="MulBackward0"]').click()
    inspector = _inspector(widget)
    saved = inspector.locator('[data-role="saved"]')
    assert re.search(r"_saved_self\s*c = 5\.", saved.inner_text())
    assert re.search(r"_saved_other\s*d = 4\.", saved.inner_text())
    assert "de/dc = d = 4." in inspector.locator('[data-role="formulas"]').inner_text()
    assert "e = c * d" in inspector.inner_text()  # the cell line that made it

    # a leaf's AccumulateGrad: the contributions to a.grad
    accumulate_a = widget.locator('[data-label="AccumulateGrad"]').filter(
        has=page.locator("text.sub", has_text=re.compile("^a$"))
    )
    accumulate_a.click()
    rows = inspector.locator('[data-role="accumulations"] [data-accumulation]')
    assert rows.count() == 1
    assert re.search(r"\+\s*4\.\s*→ \.grad =\s*4\.", rows.first.inner_text())

    # the timeline: step 1 is MulBackward0; it lights up and the inspector follows
    widget.locator('[data-role="next"]').click()
    assert widget.locator('[data-role="step-label"]').inner_text() == "step 1 of 5: MulBackward0"
    assert "current" in widget.locator('[data-label="MulBackward0"]').get_attribute("class")
    assert widget.locator(".edge.lit").count() == 2
    assert inspector.locator(".title").inner_text() == "MulBackward0"
    widget.locator('[data-role="next"]').click()
    assert "AccumulateGrad (d)" in widget.locator('[data-role="step-label"]').inner_text()
    widget.scroll_into_view_if_needed()
    ARTIFACTS.mkdir(exist_ok=True)
    widget.screenshot(path=str(ARTIFACTS / "widget-jupyterlab.png"))

    # the XSS name: shown as those characters, nothing runs, no <img> in the widget
    evil = widgets.nth(1)
    node = evil.locator("[data-node-id]").filter(has=page.locator("text.label", has_text=XSS))
    node.first.wait_for()
    assert node.first.get_attribute("data-label") == XSS
    node.first.click()
    assert _inspector(evil).locator(".title").inner_text() == XSS
    assert evil.locator("img").count() == 0
    # its value has 300 elements: a summary, then the whole array, fetched from the kernel as the
    # inspector opens (js/src/values.js loads up to 1,024 elements without a click)
    loaded = _inspector(evil).locator(".load-status.loaded")
    loaded.first.wait_for(timeout=20_000)
    assert "15×20 float32, 300 values" in loaded.first.inner_text()
    evil.screenshot(path=str(ARTIFACTS / "widget-jupyterlab-xss-and-fetch.png"))

    # two-way: the click and a step reached Python (re-run the cell that prints them)
    evil.locator('[data-role="last"]').click()
    page.wait_for_timeout(500)
    sync_cell = page.locator(".jp-CodeCell", has_text='print("SYNC"')
    sync_cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-OutputArea-output')]"
        ".some(e => /SYNC '\\w+' [1-9]/.test(e.textContent))",
        timeout=30_000,
    )

    # two-way, the other way: selecting from Python opens that node in the inspector
    select_cell = page.locator(".jp-CodeCell", has_text="w.selected = next(")
    select_cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.nbgrad-widget [data-role=inspector] .title')]"
        ".some(e => e.textContent === 'loss')",
        timeout=30_000,
    )
    assert page.dialogs == []
    assert page.problems == []


def test_widget_in_notebook_7(lab, page):
    """The same server serves Notebook 7 (the `notebook` package's pages) next to JupyterLab."""
    pytest.importorskip("notebook", minversion="7")
    try:
        _open_notebook(page, f"{lab}/notebooks/notebook7.ipynb")
        _run_all(page)
        widget = page.locator(".nbgrad-widget").first
        widget.wait_for(timeout=60_000)
        widget.locator('[data-label="MulBackward0"]').click()
        saved = _inspector(widget).locator('[data-role="saved"]')
        assert re.search(r"_saved_self\s*c = 5\.", saved.inner_text())
        widget.locator('[data-role="next"]').click()
        label = widget.locator('[data-role="step-label"]')
        assert label.inner_text() == "step 1 of 5: MulBackward0"
        widget.scroll_into_view_if_needed()
        ARTIFACTS.mkdir(exist_ok=True)
        widget.screenshot(path=str(ARTIFACTS / "widget-notebook7.png"))
    except Exception:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "failure-notebook7.png"))
        raise
    assert page.dialogs == []
    # Notebook 7's own code stumbles on the JupyterLab-only setting written for these tests
    # (no news toast); only errors from elsewhere count
    assert [p for p in page.problems if "/static/notebook/" not in p] == []


# --- a saved HTML file ----------------------------------------------------------------------------


def _record_simple():
    import nbgrad as torch

    with nbgrad.record() as trace:
        a = torch.tensor(2.0, requires_grad=True)
        b = torch.tensor(3.0, requires_grad=True)
        c = a + b
        d = torch.tensor(4.0, requires_grad=True)
        e = c * d
        e.backward()
    return trace


def test_save_html_works_offline(tmp_path, page):
    path = GraphWidget(_record_simple()).save_html(tmp_path / "graph.html")
    requests = []
    page.route("**/*", lambda route: (requests.append(route.request.url), route.continue_()))
    page.goto(path.as_uri())
    page.wait_for_selector("[data-node-id]")
    assert all(url.startswith(("file:", "blob:", "data:")) for url in requests), requests

    page.locator('[data-label="MulBackward0"]').click()
    saved = page.locator('[data-role="inspector"] [data-role="saved"]')
    assert re.search(r"_saved_self\s*c = 5\.", saved.inner_text())
    page.locator('[data-view="forward"]').click()
    page.locator('[data-label="a"]').click()
    rows = page.locator('[data-role="inspector"] [data-role="accumulations"] [data-accumulation]')
    assert rows.count() == 1
    page.locator('[data-role="last"]').click()
    assert page.locator('[data-role="step-label"]').inner_text().startswith("step 5 of 5")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "widget-save-html.png"))
    assert page.problems == []


def test_save_html_decodes_its_arrays_when_inspected(tmp_path, page):
    """A saved page carries its arrays as bytes: inspected, one shows its statistics (computed in
    the page) and its elements, float32 as float32, NaN as nan, without a kernel."""
    w = nbgrad.arange(600.0).reshape(20, 30) / 7
    w[0, 1] = float("nan")
    w.requires_grad_()
    with nbgrad.record() as trace:
        (w * 2).sum().backward()
    path = GraphWidget(trace).save_html(tmp_path / "values.html")
    page.goto(path.as_uri())
    page.wait_for_selector("[data-node-id]")
    page.locator('[data-view="forward"]').click()
    page.locator('[data-label="w"]').click()
    value = page.locator('[data-role="inspector"] [data-role="value"]')
    value.locator(".load-status.loaded").wait_for(timeout=20_000)
    text = value.inner_text()
    elements = np.arange(600.0, dtype=np.float32).reshape(20, 30) / np.float32(7)
    finite = np.delete(elements.ravel(), 1).astype(np.float64)
    assert re.search(rf"max\s*{finite.max():.4g}", text), text
    assert re.search(rf"mean\s*{finite.mean():.4g}", text), text
    assert re.search(r"nan/inf\s*1", text), text
    assert "20×30 float32, 600 values" in text
    assert f"{float(elements[0, 2]):.4g}" in text and "nan" in text
    assert page.problems == []


def test_save_html_of_an_empty_trace_says_so(tmp_path, page):
    with nbgrad.record() as trace:
        pass
    path = GraphWidget(trace).save_html(tmp_path / "empty.html")
    page.goto(path.as_uri())
    message = page.locator('[data-role="message"]')
    message.wait_for()
    assert "Nothing to draw" in message.inner_text()
    assert page.locator("[data-node-id]").count() == 0


def _record_residual_net():
    """A model whose module groups interleave: a residual block calls its layers beside a skip
    connection, and a penalty on the first layer's weight is computed outside every module."""
    import nbgrad as torch
    from nbgrad import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.act = nn.Tanh()

        def forward(self, x):
            return x + self.act(self.fc(x))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(3, 4)
            self.blocks = nn.Sequential(Block(), Block())
            self.head = nn.Linear(4, 2)

        def forward(self, x, y):
            h = self.blocks(torch.relu(self.inp(x)))
            loss = nn.functional.cross_entropy(self.head(h), y)
            return loss + 0.01 * (self.inp.weight**2).sum()

    torch.manual_seed(0)
    net = Net()
    with nbgrad.record() as trace:
        net(torch.randn(5, 3), torch.tensor([0, 1, 0, 1, 1])).backward()
    return trace


# Every drawn node and group box, as boxes on the page, and which boxes each node lies in.
_BOXES_JS = """() => {
  const box = (el) => { const r = el.getBoundingClientRect();
    return { x: r.x, y: r.y, width: r.width, height: r.height }; };
  return {
    groups: [...document.querySelectorAll(".group-box")].map((g) =>
      ({ path: g.getAttribute("data-group"), ...box(g.querySelector("rect")) })),
    nodes: [...document.querySelectorAll("[data-node-id]")].map((n) =>
      ({ id: n.getAttribute("data-node-id"), module: n.getAttribute("data-module"),
         ...box(n.querySelector(".shape")) })),
  };
}"""


def _inside(inner, outer):
    return (
        inner["x"] >= outer["x"] - 0.5
        and inner["y"] >= outer["y"] - 0.5
        and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + 0.5
        and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + 0.5
    )


def _overlap(a, b):
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


def test_module_group_boxes_hold_their_nodes_and_no_others(tmp_path, page):
    path = GraphWidget(_record_residual_net()).save_html(tmp_path / "net.html")
    page.goto(path.as_uri())
    page.wait_for_selector(".group-box")
    for view in ("backward", "forward"):
        page.locator(f'[data-view="{view}"]').click()
        page.get_by_role("button", name="fit", exact=True).click()
        drawn = page.evaluate(_BOXES_JS)
        groups = {g["path"]: g for g in drawn["groups"]}
        assert {"net", "net.inp", "net.blocks", "net.blocks.0.fc", "net.head"} <= set(groups)
        for group_path, box in groups.items():
            parent = group_path.rsplit(".", 1)[0] if "." in group_path else None
            if parent in groups:
                assert _inside(box, groups[parent]), (view, group_path)
            for node in drawn["nodes"]:
                module = node["module"] or ""
                if module == group_path or module.startswith(group_path + "."):
                    assert _inside(node, box), (view, node["id"], group_path)
                else:
                    assert not _overlap(node, box), (view, node["id"], module, group_path)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"widget-groups-{view}.png"))
    assert page.problems == []


# --- the tutorials, as a learner first opens them -----------------------------------------------

TUTORIALS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("name", TUTORIALS)
def test_a_tutorial_opens_clean_on_a_picture_of_its_graph(lab, browser, name):
    """Opened untrusted (as any notebook just cloned), before any cell runs: JupyterLab does not
    mark it modified once its kernel is up, and its first recorded graph shows as a picture (the
    stored static drawing; untrusted HTML loses inline SVG, so it is an image)."""
    _start_kernel(lab, f"tutorials/{name}")
    for width, height in ((1400, 900), (1024, 768)):
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        _open_notebook(page, f"{lab}/lab/tree/tutorials/{name}?reset")
        page.wait_for_timeout(1_500)  # the kernel's language_info arrives after idle
        tab = page.locator(".lm-TabBar-tab.jp-mod-current")
        assert "jp-mod-dirty" not in (tab.get_attribute("class") or ""), f"{name} opened modified"
        pictures = page.locator(".jp-OutputArea-output img[src^='data:image/svg+xml']")
        assert pictures.count() > 0, f"{name} shows no picture of a graph"
        pictures.first.scroll_into_view_if_needed()
        size = pictures.first.evaluate("i => [i.complete, i.naturalWidth, i.naturalHeight]")
        assert size[0] and size[1] > 50 and size[2] > 30, f"{name}: the picture did not load"
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=ARTIFACTS / f"tutorial-{name[:2]}-{width}x{height}.png")
        context.close()
