// The graph as SVG: one <g data-node-id data-label> per drawn node, one path per edge, and a
// box around each expanded module group. Texts go in as text nodes (see dom.js).

import { s } from "./dom.js";
import { BOX_PADDING, GROUP_TITLE_FONT_PX, nodeLabels, shortenToWidth, textWidth } from "./labels.js";
import { TITLE_PAD, placeTitles } from "./titles.js";

function edgePath(points) {
  if (!points || points.length === 0) return "";
  const [first, ...rest] = points;
  if (rest.length === 1) return `M${first.x},${first.y}L${rest[0].x},${rest[0].y}`;
  // a smooth curve through dagre's points: quadratic pieces between midpoints
  let d = `M${first.x},${first.y}`;
  for (let i = 0; i < rest.length - 1; i++) {
    const p = rest[i];
    const q = rest[i + 1];
    const mx = (p.x + q.x) / 2;
    const my = (p.y + q.y) / 2;
    d += i === rest.length - 2 ? `Q${p.x},${p.y} ${q.x},${q.y}` : `Q${p.x},${p.y} ${mx},${my}`;
  }
  return d;
}

function nodeClass(node) {
  const roles = String(node.role || "")
    .split(" ")
    .filter(Boolean)
    .map((r) => `role-${r}`);
  return ["node", `kind-${node.kind}`, ...roles].join(" ");
}

function drawNode(node, box) {
  const { width, height } = box;
  const shape =
    node.kind === "tensor"
      ? s("rect", { class: "shape", x: -width / 2, y: -height / 2, width, height, rx: height / 2 })
      : s("rect", { class: "shape", x: -width / 2, y: -height / 2, width, height, rx: node.kind === "group" ? 8 : 3 });
  const texts = nodeLabels(node); // shortened to fit the box; the tooltip has them whole
  const title = s("title", { text: node.sub ? `${node.label}\n${node.sub}` : node.label });
  return s(
    "g",
    {
      class: nodeClass(node),
      "data-node-id": node.id,
      "data-label": node.label,
      "data-kind": node.kind,
      "data-module": node.group || null, // the module path it ran in (for tests and styles)
      transform: `translate(${box.x},${box.y})`,
      tabindex: 0,
      role: "button",
    },
    title,
    shape,
    s("text", { class: "label", x: 0, y: node.sub ? -4 : 5, text: texts.label }),
    node.sub ? s("text", { class: "sub", x: 0, y: 13, text: texts.sub }) : null,
    node.kind === "group" ? s("text", { class: "badge", x: width / 2 - 10, y: -height / 2 + 12, text: "+" }) : null,
  );
}

function groupTitle(path, modules) {
  return `− ${path}${modules[path] ? ` (${modules[path]})` : ""}`;
}

/** Texts wider than their box on the page, shortened further. Boxes are sized by measureText
 * in the page's font (labels.js); this catches what that missed (a font that loaded late, a
 * theme's letter-spacing), measured by the browser itself. Nothing happens without a layout
 * engine (jsdom) or off the page. */
export function fitTextsToBoxes(nodeEls) {
  const tooWide = [];
  for (const el of nodeEls) {
    if (!el.isConnected) return;
    const box = el.querySelector(".shape");
    const room = Number(box.getAttribute("width")) - 2 * BOX_PADDING;
    // a folded group's "+" badge shares the label's line only (labels.js sizes the box so)
    const badge = el.getAttribute("data-kind") === "group" ? 28 : 0;
    for (const text of el.querySelectorAll("text.label, text.sub")) {
      if (typeof text.getComputedTextLength !== "function") return;
      const width = text.getComputedTextLength();
      const fits = text.classList.contains("label") ? room - badge : room;
      if (width > fits + 0.5) tooWide.push([text, fits]);
    }
  }
  for (const [text, room] of tooWide) {
    const full = text.textContent;
    text.textContent = shortenToWidth(full, room, (t) => {
      text.textContent = t;
      return text.getComputedTextLength();
    });
  }
}

// Above CULL_MIN_NODES drawn nodes only what is on screen (plus CULL_MARGIN screens on each
// side) is in the DOM: the browser's style, layout and paint of an SVG grow with its elements
// (10,000 nodes cost about 3 s in chromium, js/README.md), what is on screen does not.
export const CULL_MIN_NODES = 400;
export const CULL_MARGIN = 0.5; // of the screen's width and height, on each side
// Zoomed out so far that more nodes than this would be in the DOM (their texts a pixel high),
// the part on screen is drawn as an outline instead: one path for the boxes, one for the edges
// and one for the marked nodes (selected, matches, the timeline's), whatever their number.
export const MAX_DOM_NODES = 1500;

/** Whether the rectangle { x0, y0, x1, y1 } meets `rect` ({ x, y, width, height }). */
function meets(box, rect) {
  return box.x1 >= rect.x && box.x0 <= rect.x + rect.width && box.y1 >= rect.y && box.y0 <= rect.y + rect.height;
}

/** The part of a drawing to keep in the DOM for the drawing rectangle `view` on screen: `view`
 * grown by `margin` of its size on each side (so a small pan draws nothing new). */
export function cullRect(view, margin = CULL_MARGIN) {
  return { x: view.x - view.width * margin, y: view.y - view.height * margin, width: view.width * (1 + 2 * margin), height: view.height * (1 + 2 * margin) };
}

/** What of a laid-out drawing meets `rect`: { nodes, edges, groups } as arrays of ids, edge keys
 * ("from>to") and group paths. Linear in the drawing, from the layout's coordinates alone (no
 * DOM): a 10,000-node drawing takes well under a millisecond. */
export function visibleParts(laid, rect) {
  const nodes = [];
  for (const [id, b] of laid.positions) {
    if (meets({ x0: b.x - b.width / 2, y0: b.y - b.height / 2, x1: b.x + b.width / 2, y1: b.y + b.height / 2 }, rect)) nodes.push(id);
  }
  const edges = [];
  for (const edge of laid.edges) {
    if (!edge.box) edge.box = pointsBox(edge.points);
    if (edge.box && meets(edge.box, rect)) edges.push(`${edge.from}>${edge.to}`);
  }
  const groups = [];
  for (const box of laid.groups) if (meets({ x0: box.x, y0: box.y, x1: box.x + box.width, y1: box.y + box.height }, rect)) groups.push(box.path);
  return { nodes, edges, groups };
}

function pointsBox(points) {
  if (!points || !points.length) return null;
  const box = { x0: Infinity, y0: Infinity, x1: -Infinity, y1: -Infinity };
  for (const p of points) {
    box.x0 = Math.min(box.x0, p.x);
    box.y0 = Math.min(box.y0, p.y);
    box.x1 = Math.max(box.x1, p.x);
    box.y1 = Math.max(box.y1, p.y);
  }
  return box;
}

/** A group's title as drawn: shortened to its box's width. */
function groupTitleText(box, modules) {
  return shortenToWidth(groupTitle(box.path, modules), box.width - 16, (t) => textWidth(t, GROUP_TITLE_FONT_PX));
}

/** A group's box, and apart from it (`.titleEl`, for the layer above the edges) its title on
 * a background at the place titles.js found: no edge or border is drawn across the text. */
function drawGroupBox(box, modules, place) {
  const el = s("g", { class: "group-box", "data-group": box.path }, s("rect", { x: box.x, y: box.y, width: box.width, height: box.height, rx: 10 }), s("title", { text: groupTitle(box.path, modules) }));
  el.titleEl = s(
    "g",
    { class: "group-label", "data-group": box.path },
    s("title", { text: groupTitle(box.path, modules) }),
    s("rect", { class: "group-title-bg", x: place.x, y: place.y, width: place.width, height: place.height, rx: 3 }),
    s("text", { class: "group-title", x: place.x + TITLE_PAD, y: place.y + place.height - 3, text: groupTitleText(box, modules) }),
  );
  return el;
}

function drawEdge(edge, arrowId) {
  return s("path", {
    class: "edge",
    d: edgePath(edge.points),
    "data-from": edge.from,
    "data-to": edge.to,
    "marker-end": `url(#${arrowId})`,
  });
}

/** The drawing in the SVG: `show(graph, laid, modules)` takes a new laid-out graph,
 * `update(rect)` puts in the DOM what meets `rect` (everything, for a drawing of at most
 * CULL_MIN_NODES nodes) and takes out what does not, and `decorate(classes)` sets the classes
 * of selection, search and timeline ({ nodes: Map id -> [class], edges: Map "from>to" ->
 * [class] }), kept for elements drawn later. Elements are made on first need and kept for the
 * next pan. */
export function createScene(layers, arrowId) {
  let graph = null;
  let laid = null;
  let modules = {};
  let nodeById = new Map();
  let edgeByKey = new Map();
  let groupByPath = new Map();
  // made elements, and those in the DOM now
  let made = { nodes: new Map(), edges: new Map(), groups: new Map() };
  let shown = { nodes: new Set(), edges: new Set(), groups: new Set() };
  let classes = { nodes: new Map(), edges: new Map() };
  let applied = { nodes: new Map(), edges: new Map() }; // element -> classes it was given
  let unchecked = []; // node elements whose texts the browser has not checked yet
  let titles = null; // group path -> where its title goes (titles.js), made on first need

  function show(graph_, laid_, modules_) {
    graph = graph_;
    laid = laid_;
    modules = modules_ || {};
    nodeById = new Map(graph.nodes.map((n) => [n.id, n]));
    edgeByKey = new Map(laid.edges.map((e) => [`${e.from}>${e.to}`, e]));
    groupByPath = new Map(laid.groups.map((b) => [b.path, b]));
    made = { nodes: new Map(), edges: new Map(), groups: new Map() };
    shown = { nodes: new Set(), edges: new Set(), groups: new Set() };
    applied = { nodes: new Map(), edges: new Map() };
    unchecked = [];
    titles = null;
    outlineEls = null;
    for (const layer of Object.values(layers)) layer.replaceChildren();
  }

  const culled = () => !!graph && graph.nodes.length > CULL_MIN_NODES;

  function element(kind, key) {
    let el = made[kind].get(key);
    if (el) return el;
    if (kind === "nodes") {
      el = drawNode(nodeById.get(key), laid.positions.get(key));
      unchecked.push(el);
    } else if (kind === "edges") el = drawEdge(edgeByKey.get(key), arrowId);
    else {
      // every title is placed at once (each avoids the others), when the first box is drawn
      if (!titles) titles = placeTitles(laid, (path) => textWidth(groupTitleText(groupByPath.get(path), modules), GROUP_TITLE_FONT_PX));
      el = drawGroupBox(groupByPath.get(key), modules, titles.get(key));
    }
    made[kind].set(key, el);
    return el;
  }

  function paintElement(kind, key, el) {
    if (kind === "groups") return;
    const want = classes[kind].get(key) || null;
    const had = applied[kind].get(el) || null;
    if (want === had) return;
    if (had) el.classList.remove(...had);
    if (want) el.classList.add(...want);
    if (kind === "edges") el.setAttribute("marker-end", `url(#${arrowId}${want && want.includes("lit") ? "-lit" : ""})`);
    if (want) applied[kind].set(el, want);
    else applied[kind].delete(el);
  }

  /** Put in the DOM what meets `rect` (drawing coordinates), take out the rest. Returns whether
   * anything changed. */
  let lastRect = null;
  function update(rect) {
    if (!graph) return false;
    lastRect = rect;
    const wanted = culled()
      ? visibleParts(laid, rect)
      : { nodes: graph.nodes.map((n) => n.id), edges: [...edgeByKey.keys()], groups: [...groupByPath.keys()] };
    const outline = wanted.nodes.length > MAX_DOM_NODES;
    if (outline) drawOutline(wanted);
    else if (outlineEls) {
      for (const el of outlineEls) el.remove();
      outlineEls = null;
    }
    if (outline) wanted.nodes = wanted.edges = wanted.groups = [];
    let changed = outline;
    for (const [kind, layer] of [["groups", layers.groups], ["edges", layers.edges], ["nodes", layers.nodes]]) {
      const next = new Set(wanted[kind]);
      for (const key of shown[kind]) {
        if (next.has(key)) continue;
        made[kind].get(key).remove();
        made[kind].get(key).titleEl?.remove();
        changed = true;
      }
      const fragment = document.createDocumentFragment();
      for (const key of next) {
        if (shown[kind].has(key)) continue;
        const el = element(kind, key);
        paintElement(kind, key, el);
        fragment.append(el);
        // a group's title goes in the layer above the edges (into its box where there is none)
        if (el.titleEl && layers.titles) layers.titles.append(el.titleEl);
        else if (el.titleEl) el.append(...[...el.titleEl.childNodes].filter((c) => c.nodeName !== "title"));
        changed = true;
      }
      layer.append(fragment);
      shown[kind] = next;
    }
    if (changed) raiseLit();
    return changed;
  }

  let outlineEls = null;
  /** The far view: boxes and edges as three paths (see MAX_DOM_NODES). */
  function drawOutline(wanted) {
    if (!outlineEls) {
      outlineEls = [s("path", { class: "outline-edges" }), s("path", { class: "outline-nodes" }), s("path", { class: "outline-marked" })];
      layers.edges.append(outlineEls[0]);
      layers.nodes.append(outlineEls[1], outlineEls[2]);
    }
    const rect = (b) => `M${(b.x - b.width / 2).toFixed(0)},${(b.y - b.height / 2).toFixed(0)}h${b.width.toFixed(0)}v${b.height.toFixed(0)}h${(-b.width).toFixed(0)}z`;
    let boxes = "";
    let marked = "";
    for (const id of wanted.nodes) {
      const b = laid.positions.get(id);
      boxes += rect(b);
      const want = classes.nodes.get(id);
      if (want && want.some((c) => c !== "done")) marked += rect(b);
    }
    let lines = "";
    for (const key of wanted.edges) {
      const points = edgeByKey.get(key).points || [];
      points.forEach((p, i) => (lines += `${i ? "L" : "M"}${p.x.toFixed(0)},${p.y.toFixed(0)}`));
    }
    outlineEls[0].setAttribute("d", lines);
    outlineEls[1].setAttribute("d", boxes);
    outlineEls[2].setAttribute("d", marked);
  }

  /** Lit edges (the gradient of the current step) are drawn last: on top of the others. */
  function raiseLit() {
    for (const [key, want] of classes.edges) {
      if (want.includes("lit") && shown.edges.has(key)) layers.edges.append(made.edges.get(key));
    }
  }

  function decorate(next) {
    const before = classes;
    classes = { nodes: next.nodes || new Map(), edges: next.edges || new Map() };
    for (const kind of ["nodes", "edges"]) {
      for (const key of new Set([...before[kind].keys(), ...classes[kind].keys()])) {
        // an element made but off screen gets its classes too (they show when it comes back)
        const el = made[kind].get(key);
        if (el) paintElement(kind, key, el);
      }
    }
    raiseLit();
    if (outlineEls && lastRect) update(lastRect);
  }

  return {
    show,
    update,
    decorate,
    get culled() {
      return culled();
    },
    /** The element of a drawn node if it is in the DOM now. */
    nodeElement: (id) => (shown.nodes.has(id) ? made.nodes.get(id) : null),
    /** The drawn node elements in the DOM. */
    shownNodes: () => [...shown.nodes].map((id) => made.nodes.get(id)),
    /** Node elements put in the DOM since the last call (for the browser's text check). */
    takeUnchecked() {
      const out = unchecked.filter((el) => el.isConnected);
      unchecked = unchecked.filter((el) => !el.isConnected);
      return out;
    },
    has: (id) => nodeById.has(id),
    hasEdge: (key) => edgeByKey.has(key),
    get size() {
      return graph ? graph.nodes.length : 0;
    },
  };
}

/** The arrowhead markers (plain, and for edges carrying a gradient), defined once per SVG. */
export function arrowDefs(arrowId) {
  const marker = (id, cls) =>
    s(
      "marker",
      { id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" },
      s("path", { d: "M0,0L10,5L0,10z", class: cls }),
    );
  return s("defs", null, marker(arrowId, "arrowhead"), marker(`${arrowId}-lit`, "arrowhead-lit"));
}
