"""The graph widget: draws a Trace in the notebook (front-end in js/, bundled into static/).

    nbgrad.show(e)                  # the graph behind a tensor
    nbgrad.show(nbgrad.last_trace())
    w = GraphWidget(trace); w        # a handle: w.selected, w.step, w.save_html("graph.html")

Synced with the browser: ``trace`` (the trace JSON of docs/trace-schema.md, gzip-compressed:
about a tenth of the bytes, sent as one binary buffer), ``selected`` (the id of the selected
record, "" for none: click in the browser or set it here), ``step`` (the backward timeline's
position, 0 = before the first step), ``view`` ("forward" or "backward"), ``practice`` (practice
mode: every gradient hidden until the learner works it out, js/src/practice.js) and
``practice_results`` (the learner's answers, from the browser). The trace travels
with its values apart (``limits.values == "apart"``): every array of over 16 elements is its
statistics, a few numbers and a buffer id; the browser asks for the whole array with a custom
message (``{type: "fetch", buffer}``) when the user inspects it, and the kernel answers with the
array's little-endian bytes as a binary buffer. ``save_html`` puts those bytes in the page.
"""

import base64
import gzip
import hashlib
import json
import sys
from pathlib import Path

import anywidget
import numpy as np
import traitlets

from nbgrad import widget_export, widget_static
from nbgrad.trace.node_check import check_reply
from nbgrad.trace.values import array_data_json

STATIC = Path(__file__).parent / "static"
MAX_FETCH_ELEMENTS = 1_000_000  # a larger array is refused with a message, not sent
MAX_SAVED_ELEMENTS = 2_000_000  # save_html carries whole buffers up to this many elements

# How an array's elements travel as bytes (little-endian), by dtype; float16 travels as float32
# (JavaScript has no typed array for it everywhere), bool as one byte per element.
_STORAGE = {
    "float32": "<f4",
    "float64": "<f8",
    "float16": "<f4",
    "int64": "<i8",
    "int32": "<i4",
    "int16": "<i2",
    "int8": "i1",
    "uint8": "u1",
    "bool": "u1",
}

_MISSING_BUNDLE = """
export default { render({ el }) {
  const box = document.createElement("div");
  box.style.cssText = "padding:12px;border:1px solid #f59e0b;background:#fff7ed;color:#9a3412";
  box.textContent = "The nbgrad widget's JavaScript was not built. Run `npm ci && npm run build`"
    + " in js/, or reinstall nbgrad with `pip install -e .` (needs Node.js).";
  el.append(box);
} };
"""


def _static_text(name, fallback):
    path = STATIC / name
    return path.read_text(encoding="utf-8") if path.is_file() else fallback


def _trace_data(trace):
    """(trace JSON text, parsed data, the Trace object or None) from a Trace, dict or text. A
    Trace's values travel apart (fetched when inspected); JSON or a dict is sent as it is."""
    if hasattr(trace, "to_json"):
        text = trace.to_json(values="apart")
        return text, json.loads(text), trace
    if isinstance(trace, (bytes, str)):
        return str(trace if isinstance(trace, str) else trace.decode()), json.loads(trace), None
    if isinstance(trace, dict):
        return json.dumps(trace, separators=(",", ":")), trace, None
    if trace is None:
        return "{}", {}, None
    raise TypeError(f"GraphWidget needs a Trace, its JSON or its dict, got {type(trace).__name__}")


class GraphWidget(anywidget.AnyWidget):
    """An interactive drawing of one Trace: graph, inspector and backward timeline."""

    _esm = _static_text("widget.js", _MISSING_BUNDLE)
    _css = _static_text("widget.css", "")

    trace = traitlets.Bytes(gzip.compress(b"{}")).tag(sync=True)  # the JSON, gzip-compressed
    selected = traitlets.Unicode("").tag(sync=True)
    step = traitlets.Int(0).tag(sync=True)
    view = traitlets.Unicode("backward").tag(sync=True)
    # px; 0: 560, taller when that lets the whole graph be read. The widget's foot drags it.
    height = traitlets.Int(0).tag(sync=True)
    # practice mode: the learner types each gradient a step sends; the browser fills
    # practice_results, one dict per answered edge, in step order: {"step": 1 (1-based),
    # "node": "MulBackward0", "node_id", "edge": k (index into next_functions), "target":
    # "AddBackward0" or "AccumulateGrad (d)", "input": the operand's name, "answer": the text
    # typed (None after "show me"), "expected": the recorded gradient, "right": bool}
    practice = traitlets.Bool(False).tag(sync=True)
    practice_results = traitlets.List(traitlets.Dict()).tag(sync=True)

    def __init__(self, trace=None, **kwargs):
        text, data, source = _trace_data(trace)
        self._data = data
        self._source = source
        self._drawing = None  # the latest drawing a page sent (widget_export.py)
        if "view" not in kwargs and not data.get("nodes"):
            kwargs["view"] = "forward"
        super().__init__(trace=_compress(text), **kwargs)
        self.on_msg(self._on_message)

    @property
    def trace_json(self):
        """The trace JSON the widget draws, as text."""
        return gzip.decompress(self.trace).decode("utf-8")

    def set_trace(self, trace):
        """Draw another trace (a Trace, its JSON or its dict) in this widget."""
        text, data, source = _trace_data(trace)
        self._data, self._source = data, source
        self.practice_results = []  # answers belong to the trace they were given on
        self._drawing = None  # the page sends the new trace's drawing once it has drawn it
        self.trace = _compress(text)

    # --- Python side of the selection and the timeline ---------------------------------------

    @traitlets.validate("step")
    def _valid_step(self, proposal):
        # a trace without a backward pass: the widget steps through the order backward()
        # would follow (js/src/predicted.js), at most one step per node
        steps = len(self._data.get("steps", [])) or len(self._data.get("nodes", []))
        return max(0, min(int(proposal["value"]), steps))

    @traitlets.validate("practice_results")
    def _valid_practice_results(self, proposal):
        keys = {"step", "node", "edge", "answer", "expected", "right"}
        for entry in proposal["value"]:
            missing = keys - set(entry)
            if missing:
                raise traitlets.TraitError(
                    f"a practice result needs {', '.join(sorted(keys))}; "
                    f"this one has no {', '.join(sorted(missing))}: {entry!r}"
                )
        return proposal["value"]

    @property
    def practice_score(self):
        """(right, asked): how many of the answered edges were right, out of how many."""
        results = self.practice_results
        return sum(1 for r in results if r["right"]), len(results)

    @traitlets.validate("height")
    def _valid_height(self, proposal):
        return 0 if int(proposal["value"]) <= 0 else max(260, int(proposal["value"]))

    @traitlets.validate("view")
    def _valid_view(self, proposal):
        if proposal["value"] not in ("forward", "backward"):
            raise traitlets.TraitError('view is "forward" or "backward"')
        return proposal["value"]

    def select(self, name):
        """Select a record by id ("n3") or by name (a tensor's name, or a node's class name)."""
        for key in ("tensors", "nodes", "ops"):
            for record in self._data.get(key, []):
                if name in (record.get("id"), record.get("name")):
                    self.selected = record["id"]
                    return record["id"]
        raise KeyError(name)

    # --- buffers on request -------------------------------------------------------------------

    def _on_message(self, _widget, content, _buffers):
        if isinstance(content, dict) and content.get("type") == "drawing":
            self._drawing = widget_export.drawing_from_message(content) or self._drawing
            return
        if isinstance(content, dict) and content.get("type") == "check":
            self.send(check_reply(self._source, content))  # "check this node" (node_check.py)
            return
        if not isinstance(content, dict) or content.get("type") != "fetch":
            return
        reply = {"type": "buffer", "request": content.get("request")}
        reply.update(self._buffer_reply(content.get("buffer")))
        array = reply.pop("array", None)
        if array is not None and array.dtype.name in _STORAGE:
            storage = _STORAGE[array.dtype.name]
            reply["storage"] = storage
            self.send(reply, buffers=[_bytes_of(array, storage)])
            return
        if array is not None:  # a dtype with no typed array (complex): its elements as JSON
            reply["data"] = array_data_json(array)
        self.send(reply)

    def _buffer_reply(self, buffer_id):
        """{"ok": True, "shape", "dtype", "array": the NumPy array} or {"ok": False, "error"}."""
        if self._source is None or not hasattr(self._source, "buffer"):
            return {"ok": False, "error": "this widget was made from JSON: no arrays to send"}
        try:
            array = self._source.buffer(buffer_id)
        except KeyError:
            return {"ok": False, "error": f"the trace kept no array {buffer_id!r}"}
        if array.size > MAX_FETCH_ELEMENTS:
            return {
                "ok": False,
                "error": f"{array.size} values is too many to show (at most {MAX_FETCH_ELEMENTS})",
            }
        return {"ok": True, "shape": list(array.shape), "dtype": array.dtype.name, "array": array}

    # --- what shows where the widget cannot run -----------------------------------------------

    def __repr__(self):
        return f"<GraphWidget: {widget_static.summary_of(self._data)}>"

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle or {}, {})
        data = dict(data)
        # Where the widget cannot run (a terminal, nbconvert, GitHub) the trace's own text
        # summary says the most; a trace given as bare JSON gets the one-line count.
        if self.practice:  # the text summary lists the gradients: the answers
            data["text/plain"] = f"{widget_static.summary_of(self._data)} (practice mode)"
        elif self._source is not None:
            # a Trace's text summary, or a DiffResult's (nbgrad.diff)
            data["text/plain"] = self._source.summary()
        else:
            data["text/plain"] = widget_static.summary_of(self._data)
        data["text/html"] = widget_static.html_of(self._data)
        return data, metadata

    # --- the drawing as a file (nbgrad/widget_export.py) ---------------------------------------

    def save_svg(self, path):
        """Write the current view as a standalone SVG file (styles inlined); returns the path.

        "The current view" is the drawing of one view (forward or backward), whole (not only
        the part panned and zoomed to), at scale 1 (a view of over 1500 drawn nodes as the
        outline the widget draws for so many: boxes and edges, no texts; fold groups first):

        - when a notebook page has drawn this widget: the drawing as that page last showed it,
          with the groups the user folded or opened, the hidden reshapes, the selection, the
          timeline's step and the search marks. The page sends it half a second after the view
          last changed (a drawing of over 400 drawn nodes: only when exported from the toolbar),
          and the kernel reads it between cells: a change made in the cell that calls save_svg
          (``w.selected = ...``) shows only from the next cell.
        - when no page has drawn it (a script, or before the widget is displayed): the widget as
          it first opens, drawn by a headless Chromium (Playwright) from the ``save_html`` page:
          the ``view``, ``selected`` and ``step`` set here, groups folded as the widget folds
          them at first. Without Playwright and a Chromium this raises, saying how to get one.
        """
        return widget_export.save_svg(self, path)

    def save_png(self, path):
        """Write the current view (see ``save_svg``) as a PNG image at twice the drawing's size
        (less for a drawing over 8192 px a side); returns the path. A PNG is always drawn by a
        headless Chromium (Playwright): from the latest drawing a page sent, else from the
        ``save_html`` page."""
        return widget_export.save_png(self, path)

    # --- one shareable file -------------------------------------------------------------------

    def save_html(self, path, title="autograd graph"):
        """Write one self-contained HTML file with this widget, interactive, working offline.

        The values ride along as bytes: one gzip-compressed blob of every kept array's
        little-endian elements (up to MAX_SAVED_ELEMENTS in all, identical arrays once), with an
        index of offsets; the page decodes an array only when it is inspected. Those arrays
        carry no statistics in the page's trace JSON: the page computes them from the bytes."""
        blob = _Blob()
        trace_bytes = self.trace
        if self._source is not None and hasattr(self._source, "to_dict"):
            from nbgrad.trace.serialize import CARRIED

            data = self._source.to_dict(values=CARRIED, carried=blob.carry)
            trace_bytes = _compress(json.dumps(data, separators=(",", ":")))
        page = _page(
            title=title,
            css=_static_text("widget.css", ""),
            esm=_static_text("widget.js", _MISSING_BUNDLE),
            state={
                "trace": base64.b64encode(trace_bytes).decode("ascii"),
                "selected": self.selected,
                "step": self.step,
                "view": self.view,
                "height": self.height,
                "practice": self.practice,
                "practice_results": self.practice_results,
            },
            blob=blob,
        )
        Path(path).write_text(page, encoding="utf-8")
        return Path(path)


def _compress(text):
    # level 6: 10,000 nodes' 8 MB of JSON become 0.8 MB in about 0.08 s
    return gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)


def _bytes_of(array, storage):
    """The array's elements as little-endian bytes of ``storage`` (``_STORAGE``), in C order."""
    return np.ascontiguousarray(array, dtype=np.dtype(storage)).tobytes()


class _Blob:
    """The bytes of the arrays a saved page carries: ``carry(buffer_id, array)`` adds one
    (identical arrays share their bytes) while the budget lasts, and says whether it did."""

    def __init__(self, budget=MAX_SAVED_ELEMENTS):
        self.budget = budget
        self.parts = []
        self.size = 0
        self.index = {}  # buffer id -> [byte offset, storage, shape, dtype]
        self._offsets = {}  # (storage, bytes digest) -> byte offset

    def carry(self, buffer_id, array):
        storage = _STORAGE.get(array.dtype.name)
        if storage is None or array.size > self.budget:
            return False
        raw = _bytes_of(array, storage)
        key = (storage, hashlib.blake2b(raw, digest_size=16).digest())
        offset = self._offsets.get(key)
        if offset is None:
            offset = self._offsets[key] = self.size
            self.parts.append(raw)
            self.size += len(raw)
            self.budget -= array.size
        self.index[buffer_id] = [offset, storage, list(array.shape), array.dtype.name]
        return True

    def encoded(self):
        """The blob gzip-compressed, in base64 ("" when it is empty)."""
        if not self.size:
            return ""
        zipped = gzip.compress(b"".join(self.parts), compresslevel=6, mtime=0)
        return base64.b64encode(zipped).decode("ascii")


def _script_json(value):
    """JSON safe inside a <script> element."""
    text = json.dumps(value, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ margin: 16px; font-family: system-ui, sans-serif; }}
{css}
</style>
</head>
<body>
<div id="nbgrad-root"></div>
<script type="application/json" id="nbgrad-state">{state}</script>
<script type="text/plain" id="nbgrad-values">{index}</script>
<script type="text/plain" id="nbgrad-blob">{blob}</script>
<script type="text/plain" id="nbgrad-bundle">{bundle}</script>
<script type="module">
// A stand-in for the Jupyter widget model: the same get/set/on/send, with no kernel behind it.
const read = (id) => JSON.parse(document.getElementById(id).textContent);
const state = read("nbgrad-state");
state.trace = Uint8Array.from(atob(state.trace), (c) => c.charCodeAt(0));
// The values: one gzip-compressed blob of little-endian bytes and its index (buffer id ->
// [byte offset, storage, shape, dtype], gzip-compressed JSON), decompressed when an array is
// first inspected.
const gunzip = async (id) => {{
  const text = document.getElementById(id).textContent.trim();
  if (!text) return new Uint8Array(0);
  const zipped = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  const stream = new Response(zipped).body.pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}};
let values = null;
const valuesOfPage = () => (values ||= (async () => ({{
  index: JSON.parse(new TextDecoder().decode(await gunzip("nbgrad-values"))),
  bytes: await gunzip("nbgrad-blob"),
}}))());
const ITEM = {{ "<f4": 4, "<f8": 8, "<i8": 8, "<i4": 4, "<i2": 2, i1: 1, u1: 1 }};
const listeners = {{}};
const emit = (name, ...args) => (listeners[name] || []).forEach((fn) => fn(...args));
const model = {{
  get: (key) => state[key],
  set: (key, value) => {{ state[key] = value; emit("change:" + key); }},
  save_changes: () => {{}},
  on: (name, fn) => {{ (listeners[name] ||= []).push(fn); }},
  off: (name, fn) => {{ listeners[name] = (listeners[name] || []).filter((f) => f !== fn); }},
  send: async (message) => {{
    if (message && message.type === "check") {{
      const text = "checking a node needs the running kernel: this is a saved page. " +
        "Run the cell in Jupyter to check it";
      emit("msg:custom", {{ type: "check", request: message.request, ok: false, error: text }});
      return;
    }}
    if (!message || message.type !== "fetch") return;
    const head = {{ type: "buffer", request: message.request }};
    let page;
    try {{
      page = await valuesOfPage();
    }} catch (error) {{
      const text = `the page's values could not be read (${{error.message}})`;
      emit("msg:custom", {{ ...head, ok: false, error: text }});
      return;
    }}
    const {{ index, bytes: blob }} = page;
    const entry = index[message.buffer];
    if (!entry) {{
      const text = "this saved page does not include that array";
      emit("msg:custom", {{ ...head, ok: false, error: text }});
      return;
    }}
    const [offset, storage, shape, dtype] = entry;
    const length = shape.reduce((a, b) => a * b, 1) * ITEM[storage];
    const bytes = blob.slice(offset, offset + length);
    emit("msg:custom", {{ ...head, ok: true, shape, dtype, storage }}, [bytes.buffer]);
  }},
}};
const code = atob(document.getElementById("nbgrad-bundle").textContent.trim());
const bytes = Uint8Array.from(code, (c) => c.charCodeAt(0));
const url = URL.createObjectURL(new Blob([bytes], {{ type: "text/javascript" }}));
const widget = (await import(url)).default;
widget.render({{ model, el: document.getElementById("nbgrad-root") }});
</script>
</body>
</html>
"""


def _page(title, css, esm, state, blob):
    import html

    return _PAGE.format(
        title=html.escape(title),
        css=css.replace("</", "<\\/"),
        state=_script_json(state),
        index=base64.b64encode(_compress(json.dumps(blob.index, separators=(",", ":")))).decode(),
        blob=blob.encoded(),
        bundle=base64.b64encode(esm.encode("utf-8")).decode("ascii"),
    )


# --- showing ------------------------------------------------------------------------------------


def graph(obj, names=None):
    """A GraphWidget for a Trace (or its JSON) or for a tensor's graph, without displaying it.
    A real PyTorch tensor is read by the trace package's bridge (nbgrad.trace.torch_bridge)."""
    if hasattr(obj, "grad_fn") and hasattr(obj, "detach"):
        if type(obj).__module__.split(".")[0] == "torch":
            from nbgrad.trace.torch_bridge import trace_of_torch_tensor

            return GraphWidget(trace_of_torch_tensor(obj, names))
        from nbgrad.trace.graph_reader import trace_of_tensor

        return GraphWidget(trace_of_tensor(obj, names))
    return GraphWidget(obj)


def display_trace(trace, practice=False):
    """Show a recorded trace below the cell: what ``%%autograd`` calls after recording
    (``practice=True``: in practice mode, for ``%%autograd --practice``)."""
    from IPython.display import display

    display(GraphWidget(trace, practice=practice))


def show(obj, names=None):
    """Show the graph of a tensor (its grad_fn and everything below it) or of a Trace.

    Tensors are named after the variables in ``names`` (by default, where ``show`` was called).
    """
    from IPython.display import display

    if names is None:
        caller = sys._getframe(1)
        names = {**caller.f_globals, **caller.f_locals}
    display(graph(obj, names))
