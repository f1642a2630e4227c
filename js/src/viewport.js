// Pan (drag the background), zoom (wheel or pinch, around the pointer) and fit, by one transform
// on the SVG's root group.

export function createViewport(svg, root) {
  const state = { x: 0, y: 0, k: 1, width: 0, height: 0 };
  const apply = () => root.setAttribute("transform", `translate(${state.x},${state.y}) scale(${state.k})`);

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

  return {
    state,
    /** Show the whole drawing (never magnified past 1.2x). With `minScale`, a drawing that
     * would shrink below it is shown from its top at that scale instead (still readable). */
    fit(width, height, minScale = 0) {
      state.width = width;
      state.height = height;
      const box = svg.getBoundingClientRect();
      const vw = box.width || svg.clientWidth || 800;
      const vh = box.height || svg.clientHeight || 500;
      const k = Math.min(1.2, (vw - 16) / Math.max(width, 1), (vh - 16) / Math.max(height, 1));
      state.k = Math.max(0.02, minScale, k);
      state.x = (vw - width * state.k) / 2;
      state.y = state.k > k ? 8 : Math.max(8, (vh - height * state.k) / 2);
      apply();
    },
    zoom(factor) {
      const box = svg.getBoundingClientRect();
      zoomAt(factor, (box.width || 800) / 2, (box.height || 500) / 2);
    },
    /** Bring a point of the drawing into view, if it is outside it. */
    reveal(x, y) {
      const box = svg.getBoundingClientRect();
      const vw = box.width || 800;
      const vh = box.height || 500;
      const sx = state.x + x * state.k;
      const sy = state.y + y * state.k;
      if (sx > 20 && sx < vw - 20 && sy > 20 && sy < vh - 20) return;
      state.x = vw / 2 - x * state.k;
      state.y = vh / 2 - y * state.k;
      apply();
    },
    destroy() {
      svg.removeEventListener("wheel", onWheel);
    },
  };
}
