// Pan (drag the background), zoom (wheel or pinch, around the pointer), fit and framing, by one
// transform on the SVG's root group. Listeners (the minimap) hear every change.

export const MARGIN = 8; // px kept free around a fitted drawing (the layout has margins of its own)
const MAX_FIT_SCALE = 1.2; // a small drawing is not blown up past this

export function createViewport(svg, root) {
  const state = { x: 0, y: 0, k: 1, width: 0, height: 0, userMoved: false };
  const listeners = new Set();
  const apply = () => {
    root.setAttribute("transform", `translate(${state.x},${state.y}) scale(${state.k})`);
    for (const listener of listeners) listener(state);
  };

  /** The SVG's size on screen (a default before the browser has laid the page out). */
  function size() {
    const box = svg.getBoundingClientRect();
    return { vw: box.width || svg.clientWidth || 800, vh: box.height || svg.clientHeight || 500 };
  }

  function zoomAt(factor, px, py) {
    const k = Math.min(4, Math.max(0.02, state.k * factor));
    state.x = px - ((px - state.x) * k) / state.k;
    state.y = py - ((py - state.y) * k) / state.k;
    state.k = k;
    apply();
  }

  function onWheel(event) {
    event.preventDefault();
    const box = svg.getBoundingClientRect();
    state.userMoved = true;
    zoomAt(Math.exp(-event.deltaY * 0.0015), event.clientX - box.left, event.clientY - box.top);
  }

  let drag = null;
  function onDown(event) {
    if (event.button !== 0 || event.target.closest("[data-node-id],[data-group]")) return;
    drag = { x: event.clientX - state.x, y: event.clientY - state.y, id: event.pointerId };
    svg.setPointerCapture?.(event.pointerId);
    svg.classList.add("panning");
  }
  function onMove(event) {
    if (!drag) return;
    state.x = event.clientX - drag.x;
    state.y = event.clientY - drag.y;
    state.userMoved = true;
    apply();
  }
  function onUp() {
    drag = null;
    svg.classList.remove("panning");
  }

  svg.addEventListener("wheel", onWheel, { passive: false });
  svg.addEventListener("pointerdown", onDown);
  svg.addEventListener("pointermove", onMove);
  svg.addEventListener("pointerup", onUp);
  svg.addEventListener("pointercancel", onUp);

  /** Centre the drawing's point (cx, cy) at scale k, then shift so that `keep` (a rectangle of
   * the drawing, if given) is on screen. */
  function place(k, cx, cy, keep = null, bounds = null) {
    const { vw, vh } = size();
    state.k = k;
    state.x = vw / 2 - cx * k;
    state.y = vh / 2 - cy * k;
    if (keep) {
      // the far side first, then the near side: a `keep` larger than the screen shows its start
      const right = state.x + (keep.x + keep.width) * k;
      if (right > vw - MARGIN) state.x -= right - (vw - MARGIN);
      const left = state.x + keep.x * k;
      if (left < MARGIN) state.x += MARGIN - left;
      const bottom = state.y + (keep.y + keep.height) * k;
      if (bottom > vh - MARGIN) state.y -= bottom - (vh - MARGIN);
      const top = state.y + keep.y * k;
      if (top < MARGIN) state.y += MARGIN - top;
    }
    if (bounds) {
      // no empty screen beside a drawing that does not fit: its edge goes to the screen's edge
      // (a drawing that fits along an axis is centred on it); what `keep` holds stays on screen,
      // since the drawing holds it
      const axis = (offset, extent, screen) => {
        const size = extent * k;
        if (size <= screen - 2 * MARGIN) return (screen - size) / 2;
        return Math.min(MARGIN, Math.max(screen - MARGIN - size, offset));
      };
      state.x = axis(state.x, bounds.width, vw);
      state.y = axis(state.y, bounds.height, vh);
    }
    apply();
  }

  return {
    state,
    size,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    /** The scale that shows the whole of a width x height drawing (at most MAX_FIT_SCALE). */
    fitScale(width, height) {
      const { vw, vh } = size();
      return Math.min(MAX_FIT_SCALE, (vw - 2 * MARGIN) / Math.max(width, 1), (vh - 2 * MARGIN) / Math.max(height, 1));
    },
    /** Show the whole drawing, centred, at `k` (fitScale's by default). */
    fit(width, height, k = null) {
      state.width = width;
      state.height = height;
      place(k ?? this.fitScale(width, height), width / 2, height / 2);
    },
    /** Show the rectangle `area` of the drawing at scale k, centred, keeping `keep` on screen;
     * with `bounds` (the drawing's width and height), no empty screen beside the drawing. */
    frame(area, k, keep = null, bounds = null) {
      place(k, area.x + area.width / 2, area.y + area.height / 2, keep, bounds);
    },
    /** Centre the view on a point of the drawing, at the current scale (the minimap). */
    centerOn(x, y) {
      state.userMoved = true;
      place(state.k, x, y);
    },
    /** The part of the drawing on screen, in drawing coordinates. */
    visibleRect() {
      const { vw, vh } = size();
      return { x: -state.x / state.k, y: -state.y / state.k, width: vw / state.k, height: vh / state.k };
    },
    zoom(factor) {
      const { vw, vh } = size();
      state.userMoved = true;
      zoomAt(factor, vw / 2, vh / 2);
    },
    /** Bring a point of the drawing into view, if it is outside it. */
    reveal(x, y) {
      const { vw, vh } = size();
      const sx = state.x + x * state.k;
      const sy = state.y + y * state.k;
      if (sx > 20 && sx < vw - 20 && sy > 20 && sy < vh - 20) return;
      place(state.k, x, y);
    },
    destroy() {
      svg.removeEventListener("wheel", onWheel);
      listeners.clear();
    },
  };
}
