"""``GraphWidget.save_svg`` and ``save_png``: the drawing as a file, from Python.

A kernel cannot ask the browser for its drawing and wait for the answer inside the running cell:
the browser's reply is a comm message, and the kernel handles those only between cells. So the
page sends its drawing on its own (js/src/export.js): an SVG document of the whole current view,
half a second after the view last changed and on every toolbar export, while the widget is on a
page. ``save_svg`` writes the latest one it got.

When no browser has drawn the widget (a script, a fresh kernel, the widget never displayed), the
widget's ``save_html`` page is opened in a headless Chromium through Playwright and its own
toolbar buttons make the file. A PNG is always made by a browser (a PNG needs a renderer; the
kernel has none): Chromium draws the SVG at ``PNG_SCALE`` times its size.
"""

import base64
import concurrent.futures
import shutil
import tempfile
from pathlib import Path

PNG_SCALE = 2  # js/src/export.js's PNG_SCALE
MAX_PNG_SIDE = 16384  # px; a larger drawing is scaled down to fit (export.js does the same)
BROWSER_TIMEOUT_MS = 60_000
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
PAGE_SIZE = {"width": 1400, "height": 900}  # the headless page's window

NO_DRAWING = (
    "save_svg needs a drawing and none has been made yet. Either display the widget in a notebook "
    "first (the page sends its drawing to the kernel; call save_svg in a later cell), or install "
    "Playwright and a Chromium so that nbgrad can draw it headless: `pip install playwright` and "
    "`python -m playwright install chromium` (or a system chromium on the PATH)."
)
NO_RASTERIZER = (
    "save_png needs a browser to draw the PNG (the kernel has none): `pip install playwright` and "
    "`python -m playwright install chromium` (or a system chromium on the PATH). In a notebook, "
    "the widget's PNG button downloads one without them; save_svg writes the SVG the page drew."
)


class ExportError(RuntimeError):
    """The drawing could not be made."""


def drawing_from_message(content):
    """The drawing a page sent ({"type": "drawing", "svg", "width", "height", "view"}), checked,
    or None when the message does not hold one."""
    svg = content.get("svg")
    if not isinstance(svg, str) or "<svg" not in svg:
        return None
    try:
        width, height = int(content.get("width")), int(content.get("height"))
    except (TypeError, ValueError):
        return None
    if width <= 0 or height <= 0:
        return None
    return {"svg": svg, "width": width, "height": height, "view": content.get("view")}


def save_svg(widget, path):
    path = Path(path)
    drawing = widget._drawing
    if drawing is not None:
        path.write_text(drawing["svg"], encoding="utf-8")
        return path
    return _in_browser(lambda browser: _export_from_page(browser, widget, "svg", path), NO_DRAWING)


def save_png(widget, path):
    path = Path(path)
    drawing = widget._drawing
    if drawing is not None:
        return _in_browser(lambda browser: _rasterize(browser, drawing, path), NO_RASTERIZER)
    return _in_browser(
        lambda browser: _export_from_page(browser, widget, "png", path), NO_RASTERIZER
    )


def _in_browser(work, missing):
    """Run ``work(browser)`` with a headless Chromium; ``missing`` says what to do without one.
    In a thread of its own: Playwright's synchronous API refuses to run on a thread with an
    asyncio loop, and a Jupyter kernel runs its cells on one."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise ExportError(missing) from None

    def run():
        with sync_playwright() as playwright:
            executable = shutil.which("chromium") or shutil.which("chromium-browser")
            try:
                browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            except Exception as error:  # noqa: BLE001 - Playwright's own errors, said plainly
                raise ExportError(f"no Chromium could be started ({error}). {missing}") from None
            try:
                return work(browser)
            finally:
                browser.close()

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result()


def _export_from_page(browser, widget, kind, path):
    """Open the widget's save_html page and press its export button for ``kind``."""
    with tempfile.TemporaryDirectory() as folder:
        page_file = Path(folder) / "graph.html"
        widget.save_html(page_file)
        page = browser.new_page(viewport=PAGE_SIZE, accept_downloads=True)
        page.set_default_timeout(BROWSER_TIMEOUT_MS)
        page.goto(page_file.as_uri())
        page.wait_for_selector("svg.graph [data-node-id], .nbgrad-widget.empty")
        if page.query_selector(".nbgrad-widget.empty"):
            raise ExportError("the trace has nothing to draw: no tensor operations were recorded")
        with page.expect_download() as download:
            page.click(f"[data-role=export-{kind}]")
        download.value.save_as(path)
        page.close()
    return path


def _rasterize(browser, drawing, path):
    """Draw the SVG text at PNG_SCALE (less if a side would pass MAX_PNG_SIDE) into a PNG."""
    width, height = drawing["width"], drawing["height"]
    scale = min(PNG_SCALE, MAX_PNG_SIDE / width, MAX_PNG_SIDE / height)
    page = browser.new_page(viewport={"width": width, "height": height}, device_scale_factor=scale)
    encoded = base64.b64encode(drawing["svg"].encode("utf-8")).decode("ascii")
    page.set_content(
        '<html><body style="margin:0;background:#fff">'
        f'<img id="drawing" width="{width}" height="{height}" '
        f'src="data:image/svg+xml;base64,{encoded}"></body></html>'
    )
    page.wait_for_function("document.getElementById('drawing').complete")
    page.screenshot(path=str(path), clip={"x": 0, "y": 0, "width": width, "height": height})
    page.close()
    return path
