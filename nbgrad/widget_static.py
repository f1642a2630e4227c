"""The static picture of a trace: an SVG drawing and a text summary, for wherever the live
widget cannot run (nbconvert without widget state, GitHub, nbval, a notebook not yet run).

The drawing is an ``<img>`` whose source is the SVG as a data URI, not inline SVG: JupyterLab
and Notebook 7 strip inline SVG from the HTML of an untrusted notebook (any notebook just
cloned or downloaded) but show images, so a tutorial opens on a picture of its graph.

Deterministic: the same trace always gives the same bytes (no ids of Python objects, no
timings). The layout is a plain layered one (longest path from the sinks, nodes in the order
the trace lists them); the interactive widget lays graphs out better.
"""

import base64
import html

MAX_DRAWN = 300
CHAR = 7
HEIGHT = 34
GAP_X = 18
GAP_Y = 30
MARGIN = 12

_STYLES = {
    # kind/role: (fill, stroke)
    "leaf": ("#dbeafe", "#2563eb"),
    "intermediate": ("#f3f4f6", "#9ca3af"),
    "constant": ("#ffffff", "#9ca3af"),
    "output": ("#fee2e2", "#b91c1c"),
    "op": ("#fefce8", "#ca8a04"),
    "function": ("#ede9fe", "#7c3aed"),
    "root": ("#ede9fe", "#b91c1c"),
    "accumulate": ("#d1fae5", "#047857"),
}


def _shape_text(shape):
    return "×".join(str(s) for s in shape) if shape else "scalar"


def graph_of(data):
    """(nodes, edges) of the view the widget opens with: the backward graph, or the forward
    one when nothing has a grad_fn. A node is (id, label, sub, style)."""
    tensors = {t["id"]: t for t in data.get("tensors", [])}
    nodes, edges = [], []
    if data.get("nodes"):
        outputs = {}
        for t in tensors.values():
            if t.get("grad_fn"):
                outputs.setdefault(t["grad_fn"], []).append(t)
        for node in data["nodes"]:
            if node.get("variable") in tensors:
                sub, style = tensors[node["variable"]]["name"], "accumulate"
            else:
                made = outputs.get(node["id"], [])
                sub = ", ".join(t["name"] for t in made)
                style = "root" if any(t["role"] == "output" for t in made) else "function"
            nodes.append((node["id"], node["name"], sub, style))
            for edge in node.get("next", []):
                if edge:
                    edges.append((node["id"], edge[0]))
        return nodes, edges
    seen = set()

    def add_tensor(tid):
        if tid in seen or tid not in tensors:
            return
        seen.add(tid)
        t = tensors[tid]
        nodes.append((tid, t["name"], f"{_shape_text(t['shape'])} {t['dtype']}", t["role"]))

    for op in data.get("ops", []):
        if op.get("function") or (op.get("in_backward") is not None and not op.get("node")):
            continue  # inside a custom Function's forward, or backward arithmetic: not drawn
        for i in op.get("inputs", []):
            if isinstance(i, str):
                add_tensor(i)
                edges.append((i, op["id"]))
        nodes.append((op["id"], op["op"], "", "op"))
        for o in op.get("outputs", []):
            add_tensor(o)
            edges.append((op["id"], o))
    for tid in tensors:
        add_tensor(tid)
    return nodes, edges


def _ranks(nodes, edges):
    """Longest path from the sinks (sinks lowest), iteratively."""
    ids = [n[0] for n in nodes]
    out = {i: [] for i in ids}
    into = {i: [] for i in ids}
    for a, b in edges:
        if a in out and b in out:
            out[a].append(b)
            into[b].append(a)
    waiting = {i: len(out[i]) for i in ids}
    depth = {i: 0 for i in ids if not out[i]}
    ready = [i for i in ids if not out[i]]
    while ready:
        node = ready.pop()
        for parent in into[node]:
            depth[parent] = max(depth.get(parent, 0), depth[node] + 1)
            waiting[parent] -= 1
            if waiting[parent] == 0:
                ready.append(parent)
    top = max(depth.values(), default=0)
    return {i: top - depth.get(i, 0) for i in ids}


def svg_of(data):
    """An SVG drawing of the trace's graph (at most MAX_DRAWN nodes), as text."""
    nodes, edges = graph_of(data)
    if not nodes:
        return None
    shown = nodes[:MAX_DRAWN]
    shown_ids = {n[0] for n in shown}
    edges = [(a, b) for a, b in edges if a in shown_ids and b in shown_ids]
    rank = _ranks(shown, edges)
    rows = {}
    for node in shown:
        rows.setdefault(rank[node[0]], []).append(node)
    width_of = {n[0]: max(56, CHAR * max(len(n[1]), int(len(n[2]) * 0.85)) + 22) for n in shown}
    row_widths = {
        r: sum(width_of[n[0]] for n in row) + GAP_X * (len(row) - 1) for r, row in rows.items()
    }
    total_w = max(row_widths.values()) + 2 * MARGIN
    pos = {}
    for r, row in sorted(rows.items()):
        x = MARGIN + (total_w - 2 * MARGIN - row_widths[r]) / 2
        y = MARGIN + r * (HEIGHT + GAP_Y)
        for node in row:
            w = width_of[node[0]]
            pos[node[0]] = (x + w / 2, y + HEIGHT / 2, w)
            x += w + GAP_X
    total_h = MARGIN * 2 + (max(rows) + 1) * (HEIGHT + GAP_Y) - GAP_Y
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w:.0f}" height="{total_h:.0f}" '
        f'viewBox="0 0 {total_w:.0f} {total_h:.0f}" font-family="sans-serif" '
        'role="img" aria-label="autograd graph">',
        '<defs><marker id="nbgrad-static-arrow" viewBox="0 0 10 10" refX="9" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0L10,5L0,10z" '
        'fill="#9ca3af"/></marker></defs>',
    ]
    for a, b in edges:
        xa, ya, _ = pos[a]
        xb, yb, _ = pos[b]
        y1, y2 = (
            (ya + HEIGHT / 2, yb - HEIGHT / 2) if yb > ya else (ya - HEIGHT / 2, yb + HEIGHT / 2)
        )
        parts.append(
            f'<line x1="{xa:.1f}" y1="{y1:.1f}" x2="{xb:.1f}" y2="{y2:.1f}" stroke="#9ca3af" '
            'marker-end="url(#nbgrad-static-arrow)"/>'
        )
    for node_id, label, sub, style in shown:
        x, y, w = pos[node_id]
        fill, stroke = _STYLES.get(style, _STYLES["intermediate"])
        rx = HEIGHT / 2 if style in ("leaf", "intermediate", "constant", "output") else 3
        label_y = y - 2 if sub else y + 4
        parts.append(
            f'<g data-node-id="{html.escape(node_id)}" data-label="{html.escape(label)}">'
            f'<rect x="{x - w / 2:.1f}" y="{y - HEIGHT / 2:.1f}" width="{w:.1f}" height="{HEIGHT}" '
            f'rx="{rx:.0f}" fill="{fill}" stroke="{stroke}"/>'
            f'<text x="{x:.1f}" y="{label_y:.1f}" text-anchor="middle" font-size="12" '
            f'font-weight="600" fill="#1f2328">{html.escape(label)}</text>'
        )
        if sub:
            parts.append(
                f'<text x="{x:.1f}" y="{y + 11:.1f}" text-anchor="middle" font-size="10" '
                f'fill="#6b7280">{html.escape(sub)}</text>'
            )
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def summary_of(data):
    """One line: what the trace holds."""
    steps = len(data.get("steps", []))
    passes = len(data.get("passes", []))
    parts = [
        f"{len(data.get('tensors', []))} tensors",
        f"{len(data.get('ops', []))} ops",
        f"{len(data.get('nodes', []))} grad_fn nodes",
        f"{passes} backward pass{'es' if passes != 1 else ''} ({steps} steps)",
    ]
    return "autograd graph: " + ", ".join(parts)


def html_of(data):
    """The static text/html: the SVG (or a note when there is nothing to draw) and the summary."""
    svg = svg_of(data)
    nodes, _ = graph_of(data)
    summary = html.escape(summary_of(data))
    more = ""
    if len(nodes) > MAX_DRAWN:
        more = (
            f"<div>(the first {MAX_DRAWN} of {len(nodes)} nodes; run the notebook to see all)</div>"
        )
    if svg is None:
        body = "<div>Nothing to draw: no tensor operations ran while recording.</div>"
    else:
        source = "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode()
        body = (
            '<div style="overflow:auto;max-height:600px">'
            f'<img src="{source}" alt="{summary}" style="max-width:none"></div>'
        )
    return (
        '<div class="nbgrad-static" style="font-family:sans-serif;font-size:13px">'
        f'{body}<div style="color:#6b7280">{summary}</div>{more}</div>'
    )
