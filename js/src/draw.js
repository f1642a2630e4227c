// The graph as SVG: one <g data-node-id data-label> per drawn node, one path per edge, and a
// box around each expanded module group. Texts go in as text nodes (see dom.js).

import { s } from "./dom.js";
import { BOX_PADDING, GROUP_TITLE_FONT_PX, nodeLabels, shortenToWidth, textWidth } from "./labels.js";

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
    const room = Number(box.getAttribute("width")) - 2 * BOX_PADDING + (el.getAttribute("data-kind") === "group" ? -28 : 0);
    for (const text of el.querySelectorAll("text.label, text.sub")) {
      if (typeof text.getComputedTextLength !== "function") return;
      const width = text.getComputedTextLength();
      if (width > room + 0.5) tooWide.push([text, room]);
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

/** Draw a laid-out graph into `layers` ({ groups, edges, nodes } <g> elements). */
export function drawGraph(layers, graph, laid, modules, arrowId) {
  for (const layer of Object.values(layers)) layer.replaceChildren();
  for (const box of laid.groups) {
    layers.groups.append(
      s(
        "g",
        { class: "group-box", "data-group": box.path },
        s("rect", { x: box.x, y: box.y, width: box.width, height: box.height, rx: 10 }),
        s("title", { text: groupTitle(box.path, modules) }),
        s("text", {
          class: "group-title",
          x: box.x + 8,
          y: box.y + 13,
          text: shortenToWidth(groupTitle(box.path, modules), box.width - 16, (t) => textWidth(t, GROUP_TITLE_FONT_PX)),
        }),
      ),
    );
  }
  const edgeEls = new Map();
  for (const edge of laid.edges) {
    const path = s("path", {
      class: "edge",
      d: edgePath(edge.points),
      "data-from": edge.from,
      "data-to": edge.to,
      "marker-end": `url(#${arrowId})`,
    });
    edgeEls.set(`${edge.from}>${edge.to}`, path);
    layers.edges.append(path);
  }
  const nodeEls = new Map();
  const fragment = document.createDocumentFragment();
  for (const node of graph.nodes) {
    const el = drawNode(node, laid.positions.get(node.id));
    nodeEls.set(node.id, el);
    fragment.append(el);
  }
  layers.nodes.append(fragment);
  return { nodeEls, edgeEls };
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
