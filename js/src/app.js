// The widget's page: toolbar, graph, inspector and timeline, wired together. It knows nothing
// of Jupyter: widget.js connects it to the anywidget model, standalone.js to a saved file.

import { arrowDefs, drawGraph } from "./draw.js";
import { h, s } from "./dom.js";
import { LAYOUT_BUDGET, originalId, prepareView } from "./fold.js";
import { GROUP_PREFIX, groupPaths, initialCollapsed, visibleGraph, withinBudget } from "./groups.js";
import { renderInspector } from "./inspector.js";
import { layout } from "./layout.js";
import { createTimeline, forwardHighlight, stepHighlight } from "./timeline.js";
import { indexTrace, isEmpty } from "./trace.js";
import { backwardView, drawnIdFor, forwardView } from "./views.js";
import { createViewport } from "./viewport.js";

export const COLLAPSE_THRESHOLD = 300; // views with more nodes open with every group collapsed
const READABLE_SCALE = 0.6; // a new drawing is not shrunk below this: it opens at its top
const SCHEMA_VERSION = 1; // docs/trace-schema.md

let instances = 0;

/**
 * options: trace (parsed JSON), selected, step, view ("forward" | "backward"),
 *          onSelect(id), onStep(k), onView(view), fetchBuffer(bufferId) -> Promise
 */
export function createApp(el, options) {
  const arrowId = `nbgrad-arrow-${++instances}`;
  const state = {
    index: null,
    view: options.view === "forward" ? "forward" : "backward",
    selected: options.selected || null,
    step: options.step || 0,
    graphs: {},
    collapsed: {},
    visible: null,
    drawn: null,
    laid: null,
  };

  // --- the page ---------------------------------------------------------------------------
  const viewButtons = {
    forward: h("button", { type: "button", class: "view-button", "data-view": "forward", text: "forward", title: "tensors and the ops between them" }),
    backward: h("button", { type: "button", class: "view-button", "data-view": "backward", text: "backward", title: "grad_fn nodes joined by next_functions" }),
  };
  const search = h("input", { type: "search", class: "search", placeholder: "find a node…", "aria-label": "find a node" });
  const status = h("span", { class: "status", "data-role": "status" });
  const toolbar = h(
    "div",
    { class: "toolbar" },
    h("span", { class: "view-switch" }, viewButtons.forward, viewButtons.backward),
    h("button", { type: "button", "data-role": "fit", text: "fit", title: "show the whole graph", onclick: () => fit() }),
    h("button", { type: "button", "data-role": "zoom-in", text: "+", title: "zoom in", onclick: () => viewport.zoom(1.25) }),
    h("button", { type: "button", "data-role": "zoom-out", text: "−", title: "zoom out", onclick: () => viewport.zoom(0.8) }),
    h("button", { type: "button", class: "group-button", "data-role": "expand-all", text: "expand all", title: "open every module group", onclick: () => setCollapsedAll(false) }),
    h("button", { type: "button", class: "group-button", "data-role": "collapse-all", text: "collapse all", title: "fold every module group into one node", onclick: () => setCollapsedAll(true) }),
    search,
    status,
  );
  const layers = { groups: s("g", { class: "groups" }), edges: s("g", { class: "edges" }), nodes: s("g", { class: "nodes" }) };
  const root = s("g", { class: "viewport" }, layers.groups, layers.edges, layers.nodes);
  const svg = s("svg", { class: "graph", "data-role": "graph" }, arrowDefs(arrowId), root);
  const banner = h("div", { class: "banner", "data-role": "banner" });
  const message = h("div", { class: "message", "data-role": "message" });
  const canvas = h("div", { class: "canvas" }, svg, message);
  const inspector = h("aside", { class: "inspector", "data-role": "inspector" });
  const timelineHost = h("div", { class: "timeline-host" });
  const page = h("div", { class: "nbgrad-widget" }, toolbar, banner, h("div", { class: "main" }, canvas, inspector), timelineHost);
  el.replaceChildren(page);
  const viewport = createViewport(svg, root);
  let timeline = null;

  // --- behaviour ----------------------------------------------------------------------------
  const ctx = {
    get index() {
      return state.index;
    },
    get step() {
      return state.step;
    },
    select: (id) => select(id, true),
    goToStep: (k) => setStep(k, true),
    expand: (path) => toggleGroup(path, false),
    fetchBuffer: options.fetchBuffer,
  };

  function viewGraph() {
    if (!state.graphs[state.view]) {
      const view = state.view === "forward" ? forwardView(state.index) : backwardView(state.index);
      state.graphs[state.view] = prepareView(view, state.index.modules, state.view === "forward" ? "up" : "down");
    }
    return state.graphs[state.view];
  }

  function collapsedSet() {
    if (!state.collapsed[state.view]) {
      const wanted = initialCollapsed(viewGraph(), state.index.modules, COLLAPSE_THRESHOLD);
      state.collapsed[state.view] = withinBudget(viewGraph(), state.index.modules, wanted, LAYOUT_BUDGET).collapsed;
    }
    return state.collapsed[state.view];
  }

  function redraw({ refit = true } = {}) {
    const graph = viewGraph();
    const collapsed = collapsedSet();
    state.visible = visibleGraph(graph, collapsed, state.index.modules);
    const expanded = groupPaths(graph, state.index.modules).filter((p) => !collapsed.has(p) && ![...collapsed].some((c) => p.startsWith(`${c}.`)));
    state.laid = layout(state.visible, expanded);
    state.drawn = drawGraph(layers, state.visible, state.laid, state.index.modules, arrowId);
    const folded = state.visible.nodes.filter((n) => n.kind === "group").length;
    const hasGroups = groupPaths(graph, state.index.modules).length > 0;
    for (const button of toolbar.querySelectorAll(".group-button")) button.hidden = !hasGroups;
    status.textContent = `${graph.nodes.length} nodes${folded ? `, ${folded} groups folded` : ""}${state.overBudget ? ` (the rest stays folded: over ${LAYOUT_BUDGET} drawn nodes)` : ""}`;
    for (const [name, button] of Object.entries(viewButtons)) button.classList.toggle("active", name === state.view);
    paint();
    if (refit) fit(READABLE_SCALE);
  }

  /** Fit the drawing (the fit button), or with `minScale` keep it readable from the top. */
  function fit(minScale = 0) {
    if (state.laid) viewport.fit(state.laid.width, state.laid.height, minScale);
  }

  /** The drawn element standing for a record id in the current view (its group if folded). */
  function drawnElement(id) {
    const drawnId = drawnIdFor(state.index, id, state.view);
    if (!drawnId || !state.drawn) return null;
    const shown = state.visible.standIn.get(drawnId) || drawnId;
    return state.drawn.nodeEls.get(shown) || null;
  }

  /** Selection and timeline classes. */
  function paint() {
    if (!state.drawn) return;
    for (const el of page.querySelectorAll(".selected, .current, .done, .lit")) {
      el.classList.remove("selected", "current", "done", "lit");
      if (el.classList.contains("edge")) el.setAttribute("marker-end", `url(#${arrowId})`);
    }
    let highlight = stepHighlight(state.index, state.step);
    if (state.view === "forward") highlight = forwardHighlight(state.index, highlight);
    const standIn = (id) => state.visible.standIn.get(id) || id;
    for (const id of highlight.done) state.drawn.nodeEls.get(standIn(id))?.classList.add("done");
    if (highlight.current) state.drawn.nodeEls.get(standIn(highlight.current))?.classList.add("current");
    for (const [from, to] of highlight.edges) {
      const edge = state.drawn.edgeEls.get(`${standIn(from)}>${standIn(to)}`);
      if (!edge) continue;
      edge.classList.add("lit");
      edge.setAttribute("marker-end", `url(#${arrowId}-lit)`);
      edge.parentNode.append(edge); // drawn last: on top of the others
    }
    const selected = state.selected ? (state.selected.startsWith(GROUP_PREFIX) ? state.drawn.nodeEls.get(state.selected) : drawnElement(state.selected)) : null;
    if (selected) selected.classList.add("selected");
    for (const copy of state.visible.copies.get(state.selected) || []) state.drawn.nodeEls.get(copy)?.classList.add("selected");
  }

  function select(id, fromUser) {
    state.selected = id || null;
    renderInspector(inspector, ctx, state.selected);
    paint();
    const el = state.selected ? drawnElement(state.selected) : null;
    if (el && state.laid) {
      const box = state.laid.positions.get(el.getAttribute("data-node-id"));
      if (box) viewport.reveal(box.x, box.y);
    }
    if (fromUser && options.onSelect) options.onSelect(state.selected);
  }

  function setStep(k, fromUser) {
    const count = state.index.steps.length;
    state.step = Math.max(0, Math.min(count, Math.trunc(Number(k) || 0)));
    if (timeline) timeline.set(state.step);
    if (fromUser && options.onStep) options.onStep(state.step);
    // the inspector follows the node that ran
    if (state.step > 0) select(state.index.steps[state.step - 1].node, fromUser);
    else {
      renderInspector(inspector, ctx, state.selected);
      paint();
    }
  }

  function setView(view, fromUser) {
    if (view !== "forward" && view !== "backward") return;
    if (view === state.view && state.drawn) return;
    state.view = view;
    redraw();
    if (fromUser && options.onView) options.onView(view);
  }

  function toggleGroup(path, collapse) {
    const collapsed = collapsedSet();
    if (collapse) collapsed.add(path);
    else {
      collapsed.delete(path);
      // its sub-groups stay folded, so a large model opens one level at a time
      for (const p of groupPaths(viewGraph(), state.index.modules)) if (p.startsWith(`${path}.`)) collapsed.add(p);
    }
    if (state.selected === GROUP_PREFIX + path) state.selected = null;
    redraw();
    renderInspector(inspector, ctx, state.selected);
  }

  function setCollapsedAll(collapse) {
    const wanted = collapse ? new Set(groupPaths(viewGraph(), state.index.modules)) : new Set();
    const affordable = withinBudget(viewGraph(), state.index.modules, wanted, LAYOUT_BUDGET);
    state.collapsed[state.view] = affordable.collapsed;
    state.overBudget = !affordable.complete;
    redraw();
    state.overBudget = false;
  }

  svg.addEventListener("click", (event) => {
    const nodeEl = event.target.closest("[data-node-id]");
    if (nodeEl) {
      const id = nodeEl.getAttribute("data-node-id");
      if (id.startsWith(GROUP_PREFIX)) toggleGroup(id.slice(GROUP_PREFIX.length), false);
      else select(originalId(id), true);
      return;
    }
    const groupEl = event.target.closest("[data-group]");
    if (groupEl && event.target.closest(".group-title")) toggleGroup(groupEl.getAttribute("data-group"), true);
  });
  svg.addEventListener("keydown", (event) => {
    const nodeEl = event.target.closest && event.target.closest("[data-node-id]");
    if (nodeEl && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      nodeEl.dispatchEvent(new MouseEvent("click", { bubbles: true }));
    }
  });
  for (const [name, button] of Object.entries(viewButtons)) button.addEventListener("click", () => setView(name, true));
  search.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || !state.visible) return;
    const text = search.value.trim().toLowerCase();
    if (!text) return;
    const found = state.visible.nodes.find((n) => String(n.label).toLowerCase().includes(text) || String(n.sub).toLowerCase().includes(text));
    if (found) {
      if (found.kind === "group") toggleGroup(found.path, false);
      else select(found.id, true);
    }
  });

  function showBanner(trace) {
    const lines = [];
    const status_ = trace.status || {};
    if (status_.error) lines.push(`The recorded code stopped with ${status_.error}; this is what ran before.`);
    if (status_.truncated) lines.push(`Recording stopped early (${status_.truncated}); the rest ran unrecorded.`);
    banner.replaceChildren(...lines.map((text) => h("div", { text })));
    banner.hidden = lines.length === 0;
  }

  function setTrace(trace) {
    if (trace && trace.version !== undefined && trace.version !== SCHEMA_VERSION) {
      trace = { status: { error: `this trace is in schema version ${trace.version}; this widget reads version ${SCHEMA_VERSION} (update nbgrad)` } };
    }
    state.index = indexTrace(trace);
    state.graphs = {};
    state.collapsed = {};
    showBanner(state.index.trace);
    if (isEmpty(state.index)) {
      page.classList.add("empty");
      message.replaceChildren(
        h("div", { class: "empty-title", text: "Nothing to draw yet." }),
        h("div", { text: "No tensor operations ran while recording. Make a tensor with requires_grad=True and compute with it, then run the cell again." }),
      );
      for (const layer of Object.values(layers)) layer.replaceChildren();
      state.drawn = null;
      timelineHost.replaceChildren();
      renderInspector(inspector, ctx, null);
      return;
    }
    page.classList.remove("empty");
    message.replaceChildren();
    if (!state.index.nodes.size && state.view === "backward") state.view = "forward";
    timeline = createTimeline(timelineHost, { index: state.index, onStep: (k) => setStep(k, true) });
    redraw();
    setStep(state.step, false);
    select(state.selected, false);
  }

  setTrace(options.trace);
  // the first fit needs the page laid out by the browser
  (globalThis.requestAnimationFrame || setTimeout)(() => fit(READABLE_SCALE));

  return {
    setTrace,
    select: (id) => select(id, false),
    setStep: (k) => setStep(k, false),
    setView: (view) => setView(view, false),
    expand: (path) => toggleGroup(path, false),
    collapse: (path) => toggleGroup(path, true),
    get state() {
      return state;
    },
    destroy() {
      if (timeline) timeline.destroy();
      viewport.destroy();
    },
  };
}
