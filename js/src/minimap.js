// The overview in the graph's corner: every node as a small box, the part on screen as a
// rectangle; a click or a drag there moves the view. It hides while the whole drawing is on
// screen (there is nothing to find). It never covers a node: it sits in a corner of the stage
// with no node under it (corner.js), at its size or smaller, and hides while every corner has one.

import { CORNER_INSET, cornerRects, freeCorner, screenBoxes } from "./corner.js";
import { h, s } from "./dom.js";

const MAX_WIDTH = 160; // px, and at most a quarter of the graph's width (a third of its height)
const MAX_HEIGHT = 110;
const SMALLER = 0.55; // where no corner has room for the map, one this much smaller is tried

export function createMinimap(host, viewport) {
  const nodesPath = s("path", { class: "minimap-nodes" });
  const groupsPath = s("path", { class: "minimap-groups" });
  const frame = s("rect", { class: "minimap-view" });
  const svg = s("svg", { class: "minimap-svg" }, groupsPath, nodesPath, frame);
  const el = h("div", { class: "minimap", "data-role": "minimap", title: "overview: click or drag to move the view" }, svg);
  host.append(el);
  const state = { width: 0, height: 0, scale: 1, ready: false, positions: new Map(), map: { w: 0, h: 0 }, shrunk: null };

  function update(laid) {
    if (!laid) {
      state.ready = false;
      el.hidden = true;
      return;
    }
    state.width = Math.max(laid.width, 1);
    state.height = Math.max(laid.height, 1);
    const { vw, vh } = viewport.size();
    state.scale = Math.min(Math.min(MAX_WIDTH, vw / 4) / state.width, Math.min(MAX_HEIGHT, vh / 3) / state.height);
    const w = Math.max(24, state.width * state.scale);
    const hgt = Math.max(16, state.height * state.scale);
    state.map = { w, h: hgt };
    state.shrunk = null;
    state.positions = laid.positions;
    resize(false);
    svg.setAttribute("viewBox", `0 0 ${state.width} ${state.height}`);
    // one path for all nodes: a 10,000-node graph costs one element, not 10,000
    let d = "";
    for (const b of laid.positions.values()) d += `M${(b.x - b.width / 2).toFixed(0)},${(b.y - b.height / 2).toFixed(0)}h${b.width.toFixed(0)}v${b.height.toFixed(0)}h${(-b.width).toFixed(0)}z`;
    nodesPath.setAttribute("d", d);
    let g = "";
    for (const b of laid.groups || []) g += `M${b.x.toFixed(0)},${b.y.toFixed(0)}h${b.width.toFixed(0)}v${b.height.toFixed(0)}h${(-b.width).toFixed(0)}z`;
    groupsPath.setAttribute("d", g);
    state.ready = true;
    sync();
  }

  /** The frame follows the viewport; the map hides while the whole drawing is on screen. */
  function sync() {
    if (!state.ready) return;
    const view = viewport.visibleRect();
    const all = view.x <= 0.5 && view.y <= 0.5 && view.x + view.width >= state.width - 0.5 && view.y + view.height >= state.height - 0.5;
    el.hidden = all || !placeInFreeCorner();
    const x0 = Math.max(0, view.x);
    const y0 = Math.max(0, view.y);
    const x1 = Math.min(state.width, view.x + view.width);
    const y1 = Math.min(state.height, view.y + view.height);
    frame.setAttribute("x", x0);
    frame.setAttribute("y", y0);
    frame.setAttribute("width", Math.max(0, x1 - x0));
    frame.setAttribute("height", Math.max(0, y1 - y0));
    // a constant on-screen stroke, whatever the map's scale
    frame.setAttribute("stroke-width", (2 / (state.scale * (state.shrunk ? SMALLER : 1))).toFixed(2));
  }

  /** The map at its size, or SMALLER of it. */
  function resize(shrunk) {
    if (state.shrunk === shrunk) return;
    state.shrunk = shrunk;
    const f = shrunk ? SMALLER : 1;
    svg.setAttribute("width", (state.map.w * f).toFixed(1));
    svg.setAttribute("height", (state.map.h * f).toFixed(1));
  }

  /** Move the map to the first corner with no node under it, at its size or else smaller;
   * false if there is none. */
  function placeInFreeCorner() {
    const { vw, vh } = viewport.size();
    const boxes = screenBoxes(state.positions, viewport.state);
    let corner = null;
    for (const shrunk of [false, true]) {
      const f = shrunk ? SMALLER : 1;
      // its outer size on screen: the map, padding 3 px and a 1 px border on each side (style.css)
      corner = freeCorner(cornerRects(vw, vh, state.map.w * f + 8, state.map.h * f + 8), boxes);
      if (corner) {
        resize(shrunk);
        break;
      }
    }
    if (!corner) return false;
    const [vertical, horizontal] = corner.corner.split("-");
    el.dataset.corner = corner.corner;
    for (const side of ["top", "bottom", "left", "right"]) el.style[side] = side === vertical || side === horizontal ? `${CORNER_INSET}px` : "auto";
    return true;
  }

  /** The drawing's point under a pointer event on the map. */
  function pointOf(event) {
    const box = svg.getBoundingClientRect();
    const sx = box.width ? state.width / box.width : 1 / state.scale;
    const sy = box.height ? state.height / box.height : 1 / state.scale;
    return { x: (event.clientX - box.left) * sx, y: (event.clientY - box.top) * sy };
  }

  let dragging = false;
  el.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    event.preventDefault();
    event.stopPropagation();
    dragging = true;
    el.setPointerCapture?.(event.pointerId);
    const p = pointOf(event);
    viewport.centerOn(p.x, p.y);
  });
  el.addEventListener("pointermove", (event) => {
    if (!dragging) return;
    const p = pointOf(event);
    viewport.centerOn(p.x, p.y);
  });
  const stop = () => {
    dragging = false;
  };
  el.addEventListener("pointerup", stop);
  el.addEventListener("pointercancel", stop);
  const unsubscribe = viewport.onChange(sync);

  return {
    el,
    update,
    sync,
    destroy: unsubscribe,
  };
}
