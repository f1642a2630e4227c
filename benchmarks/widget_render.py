"""How fast the graph widget draws a trace, in headless chromium (issue 5's speed targets).

    python -m benchmarks.widget_render

It needs the built widget (``npm run build`` in js/), chromium and playwright (scripts/test
installs all three).

Traces are recorded by nbgrad itself (``nbgrad.record``), then handed to the widget's own bundle
in a page, as the kernel hands them over: gzip-compressed JSON bytes. Timed in the page:

- open: from the bytes to a painted graph that answers a click (decompress, parse, build the
  view, lay out with dagre, draw the SVG, two animation frames, then a click on a node must fill
  the inspector);
- expand: a click on a folded module group until the new drawing is painted.

Three runs each, on a fresh element; the median is reported (and the slowest). Also the bytes
per node: of the trace JSON (the schema of docs/trace-schema.md) and of what the widget sends.
"""

import argparse
import base64
import gzip
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import nbgrad
import nbgrad as torch
from nbgrad import nn

ROOT = Path(__file__).resolve().parent.parent
STATIC = ROOT / "nbgrad" / "static"
RUNS = 3

PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>{css}</style></head>
<body><div id="host"></div>
<script type="text/plain" id="bundle">{bundle}</script>
<script type="module">
const code = atob(document.getElementById("bundle").textContent);
const bytes = Uint8Array.from(code, (c) => c.charCodeAt(0));
const url = URL.createObjectURL(new Blob([bytes], {{ type: "text/javascript" }}));
const widget = (await import(url)).default;
const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
function model(bytes) {{
  const state = {{ trace: bytes, selected: "", step: 0, view: "backward" }};
  const listeners = {{}};
  return {{
    get: (k) => state[k], set: (k, v) => {{ state[k] = v; }}, save_changes() {{}},
    on: (n, f) => (listeners[n] ||= []).push(f), off() {{}}, send() {{}},
  }};
}}
let el = null;
window.openTrace = async (b64) => {{
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  if (el) el.remove();
  el = document.createElement("div");
  document.getElementById("host").append(el);
  const t0 = performance.now();
  await widget.render({{ model: model(bytes), el }});
  await frame(); await frame();
  const node = el.querySelector("[data-node-id]:not([data-kind=group])")
    || el.querySelector("[data-node-id]");
  node.dispatchEvent(new MouseEvent("click", {{ bubbles: true }}));
  await frame();
  const inspector = el.querySelector('[data-role="inspector"]');
  if (!inspector.getAttribute("data-selected") && node.dataset.kind !== "group")
    throw new Error("the click did not reach the inspector");
  return {{ ms: performance.now() - t0, drawn: el.querySelectorAll("[data-node-id]").length }};
}};
window.expand = async (id) => {{
  const t0 = performance.now();
  const group = el.querySelector(`[data-node-id="${{id}}"]`);
  group.dispatchEvent(new MouseEvent("click", {{ bubbles: true }}));
  await frame(); await frame();
  return {{ ms: performance.now() - t0, drawn: el.querySelectorAll("[data-node-id]").length }};
}};
window.ready = true;
</script></body></html>
"""


def layers_trace(layers):
    """h = relu(h @ W + b), ``layers`` times, no modules: 5 backward nodes per layer."""
    torch.manual_seed(0)
    weights = [torch.randn(4, 4, requires_grad=True) for _ in range(layers)]
    biases = [torch.zeros(4, requires_grad=True) for _ in range(layers)]
    x = torch.randn(2, 4)
    with nbgrad.record(max_nodes=10**7) as trace:
        h = x
        for w, b in zip(weights, biases):
            h = torch.relu(h @ w + b)
        h.sum().backward()
    return trace


def model_trace(blocks):
    """A model of ``blocks`` blocks of 5 x (Linear(4, 4), ReLU): 25 backward nodes per block."""
    torch.manual_seed(0)
    model = nn.Sequential(
        *[
            nn.Sequential(*[m for _ in range(5) for m in (nn.Linear(4, 4), nn.ReLU())])
            for _ in range(blocks)
        ]
    )
    x = torch.randn(2, 4)
    with nbgrad.record(max_nodes=10**7) as trace:
        model(x).sum().backward()
    return trace


def payload(trace):
    text = trace.to_json()
    zipped = gzip.compress(text.encode(), compresslevel=6, mtime=0)
    nodes = len(json.loads(text)["nodes"])
    return base64.b64encode(zipped).decode(), len(text) / nodes, len(zipped) / nodes, nodes


def measure(page, b64, expand=()):
    opens, expands = [], [[] for _ in expand]
    drawn = None
    for _ in range(RUNS):
        result = page.evaluate("b => openTrace(b)", b64)
        opens.append(result["ms"])
        drawn = [result["drawn"]]
        for i, group in enumerate(expand):
            step = page.evaluate("id => expand(id)", group)
            expands[i].append(step["ms"])
            drawn.append(step["drawn"])
    return opens, expands, drawn


def fmt(samples):
    return f"{statistics.median(samples):.0f} (max {max(samples):.0f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    from playwright.sync_api import sync_playwright

    if not (STATIC / "widget.js").is_file():
        raise SystemExit("build the widget first: cd js && npm ci && npm run build")
    rows = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        folder = Path(tmp)
        css = (STATIC / "widget.css").read_text()
        bundle = base64.b64encode((STATIC / "widget.js").read_bytes()).decode()
        (folder / "bench.html").write_text(PAGE.format(css=css, bundle=bundle))
        browser = p.chromium.launch(
            executable_path=shutil.which("chromium"),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        page = browser.new_page(viewport={"width": 1200, "height": 800})
        page.goto((folder / "bench.html").as_uri())
        page.wait_for_function("window.ready === true")

        cases = [
            ("1,000 nodes, no modules (drawn whole)", layers_trace(200), ()),
            ("76 nodes in 3 blocks (module groups laid out as clusters)", model_trace(3), ()),
            (
                "10,000 nodes in 400 blocks (opens folded)",
                model_trace(400),
                ("group:model", "group:model.7"),
            ),
        ]
        for title, trace, expand in cases:
            t0 = time.perf_counter()
            b64, raw, sent, nodes = payload(trace)
            serialise = time.perf_counter() - t0
            opens, expands, drawn = measure(page, b64, expand)
            rows.append((title, nodes, raw, sent, serialise, opens, expands, expand, drawn))
        browser.close()

    print("| trace | grad_fn nodes | JSON bytes/node | sent bytes/node | to_json + gzip s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for title, nodes, raw, sent, serialise, *_ in rows:
        print(f"| {title} | {nodes} | {raw:.0f} | {sent:.0f} | {serialise:.2f} |")
    print()
    print("| trace | action | drawn nodes after | ms, median of 3 (max) |")
    print("| --- | --- | ---: | ---: |")
    for title, _, _, _, _, opens, expands, expand, drawn in rows:
        print(f"| {title} | open | {drawn[0]} | {fmt(opens)} |")
        for i, group in enumerate(expand):
            print(f"| | expand `{group[6:]}` | {drawn[i + 1]} | {fmt(expands[i])} |")


if __name__ == "__main__":
    main()
