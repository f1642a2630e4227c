"""How fast the graph widget opens a trace, in headless chromium (issue 16's targets).

    python -m benchmarks.widget_render                  # every case
    python -m benchmarks.widget_render --only rnn       # cases whose name contains "rnn"
    python -m benchmarks.widget_render --bundle DIR     # another build (DIR/widget.js, .css)
    python -m benchmarks.widget_render --sizes          # the payload's sizes only (no browser)

It needs the built widget (``npm run build`` in js/), chromium and playwright (scripts/test
installs all three).

Traces are recorded by nbgrad itself (``nbgrad.record``) from four families of programs, then
handed to the widget's own bundle in a page as the kernel hands them over (gzip-compressed JSON
bytes). Timed in the page, on a fresh element each run:

- open: from the bytes to a painted graph that answers a click (decompress, parse, build the
  view, fold, lay out, draw the SVG, two animation frames, then a click on a node must fill the
  inspector);
- expand all: a click on "expand all" until the new drawing is painted (two frames), or the
  message that says it is over the budget;
- click after: a click on a drawn node until the inspector has it and a frame is painted;
- layout alone: the backward view built, folded and laid out whole (every group open, shared
  leaves copied per use), in node (benchmarks/widget_layout.mjs: V8, as in chromium), without
  the SVG; wall clock and CPU time (which other work on a shared machine does not inflate).

The median of the runs is reported, with the slowest. The targets are issue 16's: any size
opens in about 2 s; a graph without modules is laid out whole in under 0.5 s at 1,000 nodes and
under 2 s at 10,000; expanding never freezes the page.

Sizes (also alone with ``--sizes``): bytes per grad_fn node of what the widget receives up front
(the trace with its values apart, gzip-compressed; target 300), the same for the trace with its
values inline (``trace.to_json()``, what the widget received before), and the size of the
``save_html`` page (values carried as bytes; target under 5 MB at 10,000 nodes).
"""

import argparse
import base64
import gzip
import json
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

import nbgrad
import nbgrad as torch
from nbgrad import nn
from nbgrad.widget import GraphWidget

ROOT = Path(__file__).resolve().parent.parent
STATIC = ROOT / "nbgrad" / "static"

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
  return {{
    get: (k) => state[k], set: (k, v) => {{ state[k] = v; }}, save_changes() {{}},
    on() {{}}, off() {{}}, send() {{}},
  }};
}}
let el = null;
// nodes in the drawing (an older build, without the attribute, has them all in the DOM), and
// those in the DOM (only what is on screen, above 400 nodes)
const inDom = () => el.querySelectorAll("[data-node-id]").length;
const drawnCount = () =>
  +(el.querySelector("svg.graph")?.getAttribute("data-drawn-nodes") || inDom());
async function clickNode() {{
  const nodes = el.querySelectorAll("[data-node-id]:not([data-kind=group])");
  const node = nodes[Math.floor(nodes.length / 2)] || el.querySelector("[data-node-id]");
  const t0 = performance.now();
  node.dispatchEvent(new MouseEvent("click", {{ bubbles: true }}));
  await frame();
  const inspector = el.querySelector('[data-role="inspector"]');
  if (!inspector.getAttribute("data-selected") && node.dataset.kind !== "group")
    throw new Error("the click did not reach the inspector");
  return performance.now() - t0;
}}
window.openTrace = async (b64) => {{
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  if (el) el.remove();
  el = document.createElement("div");
  document.getElementById("host").append(el);
  const t0 = performance.now();
  await widget.render({{ model: model(bytes), el }});
  await frame(); await frame();
  await clickNode();
  return {{ ms: performance.now() - t0, drawn: drawnCount() }};
}};
window.expandAll = async () => {{
  const button = el.querySelector('[data-role="expand-all"]');
  if (!button || button.hidden) return null;
  const t0 = performance.now();
  button.click();
  await frame(); await frame();
  const ms = performance.now() - t0;
  const message = el.querySelector('[data-role="status"]')?.textContent || "";
  return {{ ms, drawn: drawnCount(), dom: inDom(), click: await clickNode(), message }};
}};
window.ready = true;
</script></body></html>
"""


# --- the families of programs -----------------------------------------------------------------


def rnn_trace(steps):
    """An RNN unrolled by hand, no modules: the same W_ih, W_hh, b and W_out at every step,
    with a loss term per step. About 10 backward nodes per step."""
    torch.manual_seed(0)
    w_ih = torch.randn(3, 8, requires_grad=True)
    w_hh = torch.randn(8, 8, requires_grad=True)
    b = torch.zeros(8, requires_grad=True)
    w_out = torch.randn(8, 1, requires_grad=True)
    xs = torch.randn(steps, 2, 3)
    ys = torch.randn(steps, 2, 1)
    with nbgrad.record(max_nodes=10**7) as trace:
        h = torch.zeros(2, 8)
        loss = 0
        for t in range(steps):
            h = torch.tanh(xs[t] @ w_ih + h @ w_hh + b)
            loss = loss + ((h @ w_out - ys[t]) ** 2).mean()
        loss.backward()
    return trace


def mlp_trace(layers):
    """nn.Sequential of ``layers`` x (Linear(4, 4), ReLU): 5 backward nodes per layer."""
    torch.manual_seed(0)
    model = nn.Sequential(*[m for _ in range(layers) for m in (nn.Linear(4, 4), nn.ReLU())])
    with nbgrad.record(max_nodes=10**7) as trace:
        model(torch.randn(2, 4)).sum().backward()
    return trace


def layers_trace(layers):
    """h = relu(h @ W + b), ``layers`` times, no modules: 5 backward nodes per layer."""
    torch.manual_seed(0)
    weights = [torch.randn(4, 4, requires_grad=True) for _ in range(layers)]
    biases = [torch.zeros(4, requires_grad=True) for _ in range(layers)]
    with nbgrad.record(max_nodes=10**7) as trace:
        h = torch.randn(2, 4)
        for w, b in zip(weights, biases):
            h = torch.relu(h @ w + b)
        h.sum().backward()
    return trace


class _Block(nn.Module):
    """A pre-norm transformer block: attention by hand (qkv, heads, softmax) and an MLP."""

    def __init__(self, width=8, heads=2):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.ff = nn.Sequential(nn.Linear(width, 16), nn.GELU(), nn.Linear(16, width))

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (t.view(b, n, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        attn = torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5, dim=-1) @ v
        x = x + self.proj(attn.transpose(1, 2).contiguous().view(b, n, d))
        return x + self.ff(self.ln2(x))


def transformer_trace(blocks):
    """A stack of ``blocks`` transformer-style blocks: about 61 backward nodes each."""
    torch.manual_seed(0)
    model = nn.Sequential(*[_Block() for _ in range(blocks)])
    with nbgrad.record(max_nodes=10**7) as trace:
        model(torch.randn(2, 4, 8)).sum().backward()
    return trace


def conv_trace(blocks):
    """A stack of ``blocks`` x (Conv2d, BatchNorm2d, ReLU): 7 backward nodes each."""
    torch.manual_seed(0)
    model = nn.Sequential(
        *[
            nn.Sequential(nn.Conv2d(2, 2, 3, padding=1), nn.BatchNorm2d(2), nn.ReLU())
            for _ in range(blocks)
        ]
    )
    with nbgrad.record(max_nodes=10**7) as trace:
        model(torch.randn(1, 2, 4, 4)).sum().backward()
    return trace


# name, program, targets: (open ms, layout alone ms); expanding must not freeze the page
CASES = [
    ("rnn-1k: unrolled RNN, 99 steps, reused weights", lambda: rnn_trace(99), (2000, 500)),
    ("rnn-3k: unrolled RNN, 299 steps, reused weights", lambda: rnn_trace(299), (2000, 2000)),
    ("layers-1k: 200 x relu(h @ W + b), no modules", lambda: layers_trace(200), (2000, 500)),
    ("mlp-1k: 200 x (nn.Linear, nn.ReLU)", lambda: mlp_trace(200), (2000, 500)),
    ("transformer-10k: 164 transformer-style blocks", lambda: transformer_trace(164), (2000, 2000)),
    ("conv-10k: 1,428 x (Conv2d, BatchNorm2d, ReLU)", lambda: conv_trace(1428), (2000, 2000)),
]


def layout_alone(text, folder):
    """The layout of the whole backward view, in node (None without node)."""
    node = shutil.which("node")
    if node is None:
        return None, None
    path = Path(folder) / "trace.json"
    path.write_text(text)
    out = subprocess.run(
        [node, str(ROOT / "benchmarks" / "widget_layout.mjs"), str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT / "js",
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return (result["ms"], result["cpu"]), result["drawn"]


def payload(trace, folder):
    """What the widget receives (base64 of the gzip bytes), its node count, its JSON text, and
    the sizes: (bytes per node up front, bytes per node with values inline, save_html bytes)."""
    widget = GraphWidget(trace)
    zipped = widget.trace
    nodes = len(widget._data["nodes"])
    inline = len(gzip.compress(trace.to_json().encode(), compresslevel=6, mtime=0))
    page = widget.save_html(Path(folder) / "saved.html").stat().st_size
    sizes = (len(zipped) / nodes, inline / nodes, page)
    return base64.b64encode(zipped).decode(), nodes, widget.trace_json, sizes


def size_text(sizes):
    up_front, inline, page = sizes
    return f"{up_front:,.0f} (300) | {inline:,.0f} | {page / 1e6:,.2f}"


def sizes_only(cases):
    print(
        "| trace | grad_fn nodes | up front, gzip bytes per node (target) "
        "| values inline, gzip bytes per node | save_html MB |"
    )
    print("| --- | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        for title, program, _ in cases:
            _, nodes, _, sizes = payload(program(), tmp)
            print(f"| {title} | {nodes:,} | {size_text(sizes)} |", flush=True)


def fmt(samples):
    if not samples:
        return "—"
    return f"{statistics.median(samples):,.0f} (max {max(samples):,.0f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument("--bundle", type=Path, default=STATIC, help="folder of widget.js/.css")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-expand", action="store_true", help="time opening only")
    parser.add_argument("--sizes", action="store_true", help="the payload's sizes only")
    args = parser.parse_args()
    cases = [case for case in CASES if args.only in case[0]]
    if args.sizes:
        sizes_only(cases)
        return
    from playwright.sync_api import sync_playwright

    if not (args.bundle / "widget.js").is_file():
        raise SystemExit("build the widget first: cd js && npm ci && npm run build")
    print(
        "| trace | grad_fn nodes | open ms (target) | drawn | expand all ms | drawn "
        "| in DOM | click after ms | layout alone ms, CPU ms (target) | laid out "
        "| up front B/node gzip (target) | inline B/node gzip | save_html MB |"
    )
    print("| --- " + "| ---: " * 12 + "|")
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        folder = Path(tmp)
        css = (args.bundle / "widget.css").read_text()
        bundle = base64.b64encode((args.bundle / "widget.js").read_bytes()).decode()
        (folder / "bench.html").write_text(PAGE.format(css=css, bundle=bundle))
        browser = p.chromium.launch(
            executable_path=shutil.which("chromium"),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        page = browser.new_page(viewport={"width": 1200, "height": 800})
        page.goto((folder / "bench.html").as_uri())
        page.wait_for_function("window.ready === true")
        for title, program, (open_target, layout_target) in cases:
            b64, nodes, text, sizes = payload(program(), folder)
            alone, laid_out = layout_alone(text, folder) if args.bundle == STATIC else (None, None)
            opens, expands, clicks = [], [], []
            drawn = expanded = in_dom = "—"
            for _ in range(args.runs):
                result = page.evaluate("b => openTrace(b)", b64)
                opens.append(result["ms"])
                drawn = result["drawn"]
                if args.no_expand:
                    continue
                step = page.evaluate("() => expandAll()")
                if step:
                    expands.append(step["ms"])
                    clicks.append(step["click"])
                    expanded = step["drawn"]
                    in_dom = step["dom"]
            alone_text = (
                "—"
                if alone is None
                else f"{alone[0]:,.0f}, CPU {alone[1]:,.0f} ({layout_target:,})"
            )
            print(
                f"| {title} | {nodes:,} | {fmt(opens)} ({open_target:,}) | {drawn} "
                f"| {fmt(expands)} | {expanded} | {in_dom} | {fmt(clicks)} | {alone_text} "
                f"| {laid_out or '—'} | {size_text(sizes)} |",
                flush=True,
            )
        browser.close()


if __name__ == "__main__":
    main()
