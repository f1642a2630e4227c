// The widget's page: toolbar, graph, inspector and timeline, wired together. It knows nothing
// of Jupyter: widget.js connects it to the anywidget model, standalone.js to a saved file.

import { markDiff, renderDiffLegend, withDiffEdges } from "./diff.js";
import { arrowDefs, createScene, cullRect, fitTextsToBoxes } from "./draw.js";
import { h, s } from "./dom.js";
import { createDrawingReporter, createExportButtons, exportName, svgDocument } from "./export.js";
import { failedViewIds, failureTarget, withFailedCall } from "./failure.js";
import { LAYOUT_BUDGET, originalId, prepareView } from "./fold.js";
import { boundsOf, lineage, lossNodeId, neighbourhood } from "./focus.js";
import { GROUP_PREFIX, collapsedAncestor, groupPaths, initialCollapsed, visibleGraph, withinBudget } from "./groups.js";
import { renderInspector } from "./inspector.js";
import { MIN_READABLE_SCALE, setLabelFont } from "./labels.js";
import { layout } from "./layout.js";
import { legendText } from "./legend.js";
import { magnitudePanel, markMagnitudes } from "./magnitude.js";
import { createMinimap } from "./minimap.js";
import { createPractice, createStepPanel } from "./practice.js";
import { nonfiniteBanner, nonfiniteMarks, nonfiniteOrigin } from "./nonfinite.js";
import { findMatches, createSearchCursor } from "./search.js";
import { shapeOnlyIds, withoutNodes } from "./shapes.js";
import { createTimeline, forwardHighlight, stepHighlight } from "./timeline.js";
import { indexTrace, isEmpty } from "./trace.js";
import { backwardView, drawnIdFor, forwardView } from "./views.js";
import { MARGIN, createViewport } from "./viewport.js";

export const COLLAPSE_THRESHOLD = 300; // views with more nodes open with every group collapsed
export const DEFAULT_HEIGHT = 560; // px, the widget's height unless told (GraphWidget(height=...))
const PRACTICE_EXTRA_HEIGHT = 240; // px more in practice mode, for the questions
const MIN_HEIGHT = 260;
const TEXT_CHECK_LIMIT = 1500; // nodes put on the page at once; above it, texts are not re-measured
const MAX_FOCUS_HOPS = 8; // the first view shows the loss and up to this many edges around it
// written in one place, nbgrad/trace/schema.json; the build puts it here (trace-schema-version.mjs)
/* global TRACE_SCHEMA_VERSION */
const SCHEMA_VERSION = TRACE_SCHEMA_VERSION;
// version 1 is version 2 with every value inline or summarised (no "values" limit): read as is
const READABLE_VERSIONS = [1, SCHEMA_VERSION];
// "show the neighbourhood": a node's parents and children this many edges up and down, at most
// this many nodes (drawn whole, every group open)
const NEIGHBOURHOOD_HOPS = 8;
const NEIGHBOURHOOD_LIMIT = 2000;

let instances = 0;

/**
 * options: trace (parsed JSON), selected, step, view ("forward" | "backward"),
 *          height (px), onSelect(id), onStep(k), onView(view), onHeight(px),
 *          fetchBuffer(bufferId) -> Promise,
 *          practice (bool: practice mode, practice.js), practiceResults (answers to restore),
 *          onPracticeResults(list), onDrawing({ text, width, height, view }): the
 *          drawing as an SVG document, once the view settles and on each export (export.js)
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
    hideShapes: false,
    autoHeight: !(Number(options.height) > 0), // no height asked for: grow to show the graph
    fitNote: "",
    neighbourhood: null, // { center, graph, collapsed }: only the part around a node is drawn
    magnitude: false, // nodes and edges coloured by their gradient's size (magnitude.js)
  };

  // --- the page ---------------------------------------------------------------------------
  const viewButtons = {
    forward: h("button", { type: "button", class: "view-button", "data-view": "forward", text: "forward", title: "tensors and the ops between them" }),
    backward: h("button", { type: "button", class: "view-button", "data-view": "backward", text: "backward", title: "grad_fn nodes joined by next_functions" }),
  };
  const search = h("input", { type: "search", class: "search", placeholder: "find a node…", "aria-label": "find a node", "data-role": "search" });
  const searchCount = h("span", { class: "search-count", "data-role": "search-count", "aria-live": "polite" });
  const searchPrevious = h("button", { type: "button", class: "search-step", "data-role": "search-previous", text: "‹", title: "previous match (Shift+Enter)", "aria-label": "previous match", onclick: () => stepSearch(-1) });
  const searchNext = h("button", { type: "button", class: "search-step", "data-role": "search-next", text: "›", title: "next match (Enter)", "aria-label": "next match", onclick: () => stepSearch(1) });
  const shapeToggle = h("input", { type: "checkbox", "data-role": "hide-shapes" });
  const shapeLabel = h(
    "label",
    { class: "shape-toggle", title: "hide View, Reshape, Expand, Clone, Transpose, Permute, (Un)squeeze nodes: they only move numbers around; their edges are joined" },
    shapeToggle,
    " hide reshapes",
  );
  // gradient magnitude (magnitude.js): a toggle, and under the drawing its legend and table
  const magnitudeButton = h("button", { type: "button", class: "magnitude-button", "data-role": "magnitude", "aria-pressed": "false", text: "|grad| colours", title: "colour every node and edge by the size (L2 norm) of the gradient through it, log scale; list the parameters' |grad|, |param| and ratio", onclick: () => setMagnitude(!state.magnitude) });
  const magnitudeHost = h("div", { class: "magnitude-panel", "data-role": "magnitude-panel", hidden: true });
  const status = h("span", { class: "status", "data-role": "status" });
  const statusText = h("span", { class: "status-text" });
  const neighbourhoodButton = h("button", {
    type: "button",
    class: "status-action",
    "data-role": "neighbourhood",
    text: "show the neighbourhood of the selected node",
    title: `draw the selected node (else the loss) with its parents and children up to ${NEIGHBOURHOOD_HOPS} edges away, every group open`,
    onclick: () => showNeighbourhood(state.selected),
  });
  const wholeButton = h("button", { type: "button", class: "status-action", "data-role": "whole-graph", text: "back to the whole graph", onclick: () => leaveNeighbourhood() });
  const toolbar = h(
    "div",
    { class: "toolbar" },
    h("span", { class: "view-switch" }, viewButtons.forward, viewButtons.backward),
    h("button", { type: "button", "data-role": "fit", text: "fit", title: "show the whole graph if it can be read, else the selected node (or the loss) and what is around it", onclick: () => fit() }),
    h("button", { type: "button", "data-role": "zoom-in", text: "+", title: "zoom in", onclick: () => viewport.zoom(1.25) }),
    h("button", { type: "button", "data-role": "zoom-out", text: "−", title: "zoom out", onclick: () => viewport.zoom(0.8) }),
    h("button", { type: "button", class: "group-button", "data-role": "expand-all", text: "expand all", title: "open every module group", onclick: () => setCollapsedAll(false) }),
    h("button", { type: "button", class: "group-button", "data-role": "collapse-all", text: "collapse all", title: "fold every module group into one node", onclick: () => setCollapsedAll(true) }),
    createExportButtons({ drawing: () => currentDrawing(), name: (ext) => exportName(state.index && state.index.trace, state.view, ext), onExport: (d) => options.onDrawing && options.onDrawing(d) }),
    shapeLabel,
    magnitudeButton,
    h("span", { class: "search-box" }, search, searchPrevious, searchNext, searchCount),
    status,
  );
  const layers = { groups: s("g", { class: "groups" }), edges: s("g", { class: "edges" }), titles: s("g", { class: "group-titles" }), nodes: s("g", { class: "nodes" }) };
  // group titles above the edges, so that none is drawn across one (titles.js)
  const root = s("g", { class: "viewport" }, layers.groups, layers.edges, layers.titles, layers.nodes);
  const svg = s("svg", { class: "graph", "data-role": "graph" }, arrowDefs(arrowId), root);
  const banner = h("div", { class: "banner", "data-role": "banner" });
  const message = h("div", { class: "message", "data-role": "message" });
  const legend = h("div", { class: "legend", "data-role": "legend" });
  const diffLegend = h("div", { class: "diff-legend", "data-role": "diff-legend", hidden: true }); // a diff of two traces (diff.js)
  const fitNote = h("div", { class: "fit-note", "data-role": "fit-note", hidden: true });
  const stage = h("div", { class: "stage" }, svg, message);
  // below the drawing, not over it: what the arrows mean, and why the view is not everything
  const infoBar = h("div", { class: "info-bar" }, diffLegend, legend, fitNote, magnitudeHost);
  const canvas = h("div", { class: "canvas" }, stage, infoBar);
  const inspector = h("aside", { class: "inspector", "data-role": "inspector" });
  const timelineHost = h("div", { class: "timeline-host" });
  const resizeHandle = h("div", { class: "resize-handle", "data-role": "resize", title: "drag to make the widget taller or shorter", role: "separator", "aria-orientation": "horizontal" });
  const page = h("div", { class: "nbgrad-widget" }, toolbar, banner, h("div", { class: "main" }, canvas, inspector), timelineHost, resizeHandle);
  el.replaceChildren(page);
  const viewport = createViewport(svg, root);
  const scene = createScene(layers, arrowId);
  const minimap = createMinimap(stage, viewport);
  const cursor = createSearchCursor();
  // practice mode puts its questions under the timeline: the widget opens taller for them
  if (options.practice && !(Number(options.height) > 0)) page.style.height = `${DEFAULT_HEIGHT + PRACTICE_EXTRA_HEIGHT}px`;
  const drawingReporter = createDrawingReporter({
    drawing: () => currentDrawing(),
    isShown: () => page.isConnected,
    nodeCount: () => (state.visible ? state.visible.nodes.length : 0),
    send: options.onDrawing,
  });
  setHeight(options.height);
  let timeline = null;
  let practice = null; // the learner's answers in practice mode (practice.js)
  let stepPanel = null; // under the timeline: the step's chain rule in words, or practice
  let recordedTrace = null;

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
    groupNote: (path) => (viewGraph().groupNotes || {})[path] || null,
    fetchBuffer: options.fetchBuffer,
    checkNode: options.checkNode, // nodecheck.js: node id -> Promise of the check's result
    get practice() {
      return practice !== null; // practice mode: the inspector leaves the learner's working out
    },
  };

  function viewGraph() {
    if (!state.graphs[state.view]) {
      let view = state.view === "forward" ? forwardView(state.index) : backwardView(state.index);
      view = withFailedCall(view, state.index, state.view); // a cell that raised: the call that did
      view = withDiffEdges(view, state.index, state.view); // a diff: the edges only B has
      state.graphs[state.view] = prepareView(view, state.index.modules, state.view === "forward" ? "up" : "down");
    }
    return state.graphs[state.view];
  }

  /** The view as drawn before folding: with shape-only nodes hidden if asked, and only the
   * neighbourhood of a node if one is shown. */
  function shownGraph() {
    return state.neighbourhood ? state.neighbourhood.graph : wholeGraph();
  }

  function wholeGraph() {
    const graph = viewGraph();
    if (!state.hideShapes) return graph;
    if (!graph.withoutShapes) graph.withoutShapes = withoutNodes(graph, shapeOnlyIds(graph));
    return graph.withoutShapes;
  }

  function collapsedSet() {
    if (state.neighbourhood) return state.neighbourhood.collapsed;
    if (!state.collapsed[state.view]) {
      const wanted = initialCollapsed(viewGraph(), state.index.modules, COLLAPSE_THRESHOLD);
      state.collapsed[state.view] = withinBudget(viewGraph(), state.index.modules, wanted, LAYOUT_BUDGET).collapsed;
    }
    return state.collapsed[state.view];
  }

  function redraw({ refit = true } = {}) {
    // boxes are measured in the font the page really uses (once the widget is on the page)
    if (page.isConnected && globalThis.getComputedStyle) setLabelFont(getComputedStyle(svg).fontFamily);
    const graph = shownGraph();
    const collapsed = collapsedSet();
    state.visible = visibleGraph(graph, collapsed, state.index.modules);
    const paths = groupPaths(graph, state.index.modules);
    // open: neither it nor a group around it is collapsed (linear in the paths' depth)
    const expanded = paths.filter((p) => !collapsedAncestor(p, collapsed));
    state.laid = layout(state.visible, expanded);
    scene.show(state.visible, state.laid, state.index.modules);
    state.drawn = scene;
    // how many nodes the drawing has (only those on screen are in the DOM): tests, benchmarks
    svg.setAttribute("data-drawn-nodes", String(state.visible.nodes.length));
    minimap.update(state.laid);
    const folded = state.visible.nodes.filter((n) => n.kind === "group").length;
    const hasGroups = paths.length > 0;
    for (const button of toolbar.querySelectorAll(".group-button")) button.hidden = !hasGroups;
    const shapes = shapeOnlyIds(viewGraph()).size;
    shapeLabel.hidden = shapes === 0;
    if (state.neighbourhood) {
      const { graph: part, centerLabel } = state.neighbourhood;
      statusText.textContent = `showing ${part.nodes.length} of ${wholeGraph().nodes.length} nodes: ${centerLabel} and its parents and children up to ${NEIGHBOURHOOD_HOPS} edges away `;
      status.replaceChildren(statusText, wholeButton);
    } else {
      statusText.textContent = `${graph.nodes.length} nodes${folded ? `, ${folded} ${folded === 1 ? "group" : "groups"} folded` : ""}${state.hideShapes && shapes ? `, ${shapes} reshapes hidden` : ""}${state.overBudget ? ` (the rest stays folded: over ${LAYOUT_BUDGET} drawn nodes) ` : ""}`;
      // where the budget stops "expand all", the part around a node can still be drawn whole
      status.replaceChildren(statusText, ...(state.overBudget ? [neighbourhoodButton] : []));
    }
    legend.textContent = legendText(state.view);
    legend.title = legendText(state.view);
    renderDiffLegend(diffLegend, state.index);
    runSearch(false);
    for (const [name, button] of Object.entries(viewButtons)) button.classList.toggle("active", name === state.view);
    paint();
    if (refit) {
      growToFit();
      fit();
    }
    drawOnScreen();
  }

  /** Put what is on screen in the DOM (all of a small drawing; draw.js's scene), and let the
   * browser check the texts it has not checked yet (it lays out each one, so only what is on
   * screen, never thousands: measureText sized the boxes already). */
  function drawOnScreen() {
    sceneFrame = null;
    if (!state.laid) return;
    scene.update(cullRect(viewport.visibleRect()));
    const fresh = scene.takeUnchecked();
    if (fresh.length <= TEXT_CHECK_LIMIT) fitTextsToBoxes(fresh);
  }
  // a pan or zoom draws what comes on screen, once per animation frame
  let sceneFrame = null;
  const nextFrame = globalThis.requestAnimationFrame ? (f) => globalThis.requestAnimationFrame(f) : (f) => setTimeout(f, 16);
  viewport.onChange(() => {
    if (sceneFrame === null && scene.culled) sceneFrame = nextFrame(drawOnScreen);
  });

  /** Without a height from the user, the widget grows (up to most of the window) when that lets
   * the whole graph be read: a tall chain of ops then opens whole instead of cropped. */
  function growToFit() {
    if (!state.autoHeight || !state.laid) return;
    const { height: stageHeight, width: stageWidth } = stage.getBoundingClientRect();
    const pageHeight = page.getBoundingClientRect().height;
    if (!stageHeight || !pageHeight) return; // not laid out by a browser yet
    const k = MIN_READABLE_SCALE;
    if (state.laid.width * k + 2 * MARGIN > stageWidth) return; // too wide: taller would not help
    // the note under the drawing goes away once the graph fits: its lines are not chrome
    const note = fitNote.hidden ? 0 : fitNote.getBoundingClientRect().height;
    const needed = pageHeight - stageHeight - note + state.laid.height * k + 2 * MARGIN + 1;
    const most = Math.max(DEFAULT_HEIGHT, Math.round((globalThis.innerHeight || 0) * 0.85));
    const target = Math.min(most, Math.ceil(needed));
    if (target > pageHeight) page.style.height = `${target}px`;
  }

  /** Show the whole drawing if it can be read (every text at least MIN_SCREEN_FONT_PX on screen);
   * else frame the loss and as much around it as fits at the smallest readable scale, and say so
   * (the first view and the fit button). */
  function fit() {
    if (!state.laid) return;
    state.fitNote = "";
    const { width, height, positions } = state.laid;
    const whole = viewport.fitScale(width, height);
    if (whole >= MIN_READABLE_SCALE) {
      viewport.fit(width, height, whole);
    } else {
      const k = MIN_READABLE_SCALE;
      const { vw, vh } = viewport.size();
      // (a trace with a NaN or Inf opens on where the first one appeared: nonfinite.js)
      // a node selected (from Python, a click, the timeline) is framed rather than the loss: a
      // selection made before the first fit stays in view
      const selected = drawnNodeId(state.selected);
      const loss = state.neighbourhood && state.visible.nodes.some((n) => n.id === state.neighbourhood.center) ? state.neighbourhood.center : selected || drawnNodeId(nonfiniteOrigin(state.index)) || lossNodeId(state.index, state.view, state.visible);
      const lossBox = loss ? boundsOf([loss], positions) : null;
      let area = lossBox;
      for (let hops = 1; lossBox && hops <= MAX_FOCUS_HOPS; hops++) {
        const around = boundsOf(neighbourhood(state.visible, loss, hops), positions);
        if (around.width * k > vw - 2 * MARGIN || around.height * k > vh - 2 * MARGIN) break;
        area = around;
      }
      if (area) viewport.frame(area, k, lossBox, { width, height });
      else viewport.fit(width, height, k);
      // a 10,000-node graph needs well under 1%: say how far under, not "0%"
      const percent = whole * 100 >= 1 ? `${Math.round(whole * 100)}%` : `${(whole * 100).toPrecision(1)}%`;
      const what = state.neighbourhood && loss === state.neighbourhood.center ? state.neighbourhood.centerLabel : loss && loss === drawnNodeId(nonfiniteOrigin(state.index)) ? "where the first NaN/Inf appeared" : loss && loss === selected ? "the selected node" : "the loss";
      state.fitNote = `Showing ${what} and what is near it: the whole graph would need ${percent} zoom, too small to read. Use −, the overview, or the widget's foot (drag it).`;
    }
    viewport.state.userMoved = false;
    fitNote.textContent = state.fitNote;
    fitNote.title = state.fitNote;
    fitNote.hidden = !state.fitNote;
  }

  /** The drawn node standing for a record id in the current view (its group if folded, its
   * first copy if drawn once per use), or null. */
  function drawnNodeId(id) {
    if (!id || !state.drawn) return null;
    if (id.startsWith(GROUP_PREFIX)) return scene.has(id) ? id : null;
    const drawnId = drawnIdFor(state.index, id, state.view);
    if (!drawnId) return null;
    const shown = state.visible.standIn.get(drawnId) || drawnId;
    return scene.has(shown) ? shown : null;
  }

  /** Every drawn node standing for a view id: each copy of a leaf drawn per use, else its
   * stand-in (itself or its folded group). */
  function drawnIdsOf(id) {
    const copies = state.visible.copies.get(id);
    if (copies && copies.length && scene.has(copies[0])) return copies;
    return [state.visible.standIn.get(id) || id];
  }

  /** Selection, search and timeline classes, handed to the scene (which keeps them for the
   * elements it draws later, on a pan). */
  function paint() {
    if (!state.drawn) return;
    const nodes = new Map();
    const edges = new Map();
    const mark = (map, key, cls) => {
      if (!map.has(key)) map.set(key, []);
      if (!map.get(key).includes(cls)) map.get(key).push(cls);
    };
    let highlight = stepHighlight(state.index, state.step);
    if (state.view === "forward") highlight = forwardHighlight(state.index, highlight);
    for (const id of highlight.done) for (const d of drawnIdsOf(id)) mark(nodes, d, "done");
    if (highlight.current) for (const d of drawnIdsOf(highlight.current)) mark(nodes, d, "current");
    for (const [from, to] of highlight.edges) {
      // an edge to a leaf drawn per use reaches one of its copies (from the matching copy)
      for (const a of drawnIdsOf(from)) for (const b of drawnIdsOf(to)) if (scene.hasEdge(`${a}>${b}`)) mark(edges, `${a}>${b}`, "lit");
    }
    const selected = drawnNodeId(state.selected);
    if (selected) mark(nodes, selected, "selected");
    for (const copy of state.visible.copies.get(state.selected) || []) mark(nodes, copy, "selected");
    for (const id of failedViewIds(state.index, state.view)) for (const d of drawnIdsOf(id)) mark(nodes, d, "failed");
    for (const id of cursor.matches) for (const d of drawnIdsOf(id)) mark(nodes, d, "match");
    if (cursor.current) for (const d of drawnIdsOf(cursor.current)) mark(nodes, d, "match-current");
    // a folded group stands for many nodes: it takes the NaN marks of any, no one's colour
    const colourOfOne = (cls, ...ids) => cls.startsWith("mag-") && ids.some((d) => d.startsWith(GROUP_PREFIX));
    paintDebugging((id, cls) => {
      for (const d of drawnIdsOf(id)) if (!colourOfOne(cls, d)) mark(nodes, d, cls);
    }, (from, to, cls) => {
      for (const a of drawnIdsOf(from)) for (const b of drawnIdsOf(to)) if (scene.hasEdge(`${a}>${b}`) && !colourOfOne(cls, a, b)) mark(edges, `${a}>${b}`, cls);
    });
    markDiff(state.index, state.view, { nodes, edges }, mark, drawnIdsOf, (key) => scene.hasEdge(key));
    scene.decorate({ nodes, edges });
    drawingReporter.schedule(); // the kernel gets the drawing once the view settles (export.js)
  }

  /** The whole drawing as it is now, as a standalone SVG (export.js): every part of it is put
   * in the DOM for the copy, then the screen's part again. */
  function currentDrawing() {
    if (!state.laid || !state.drawn) return null;
    scene.update({ x: -1e9, y: -1e9, width: 2e9, height: 2e9 });
    const fresh = scene.takeUnchecked();
    if (fresh.length <= TEXT_CHECK_LIMIT) fitTextsToBoxes(fresh);
    const drawing = svgDocument(svg, root, state.laid);
    drawOnScreen();
    return { ...drawing, view: state.view };
  }

  /** The first NaN/Inf marked with the path it spread along (nonfinite.js); with the toggle on,
   * every node and edge coloured by its gradient's size, and the legend and table shown
   * (magnitude.js). */
  function paintDebugging(markNode, markEdge) {
    const bad = nonfiniteMarks(state.index, state.view);
    if (bad) {
      if (bad.origin) markNode(bad.origin, "nonfinite");
      for (const id of bad.path) markNode(id, "nonfinite-path");
      for (const [from, to] of bad.edges) markEdge(from, to, "nonfinite-path");
    }
    if (!state.magnitude) return;
    const scale = markMagnitudes(state.index, state.view, markNode, markEdge);
    if (magnitudeHost.dataset.view !== state.view || magnitudeHost.hidden) {
      magnitudeHost.replaceChildren(...magnitudePanel(state.index, scale, (id) => select(id, true)));
      magnitudeHost.dataset.view = state.view;
    }
    magnitudeHost.hidden = false;
  }

  function setMagnitude(on) {
    if (!!on === state.magnitude) return;
    state.magnitude = !!on;
    magnitudeButton.setAttribute("aria-pressed", String(state.magnitude));
    magnitudeButton.classList.toggle("active", state.magnitude);
    page.classList.toggle("magnitude-on", state.magnitude);
    if (!state.magnitude) {
      magnitudeHost.hidden = true;
      magnitudeHost.replaceChildren();
    }
    const before = page.getBoundingClientRect().height;
    paint();
    // the legend and table take room under the drawing: a widget whose height the user did not
    // set grows by as much (up to most of the window) while they show, and shrinks back after
    if (state.autoHeight && state.magnitude && before) {
      const most = Math.max(DEFAULT_HEIGHT, Math.round((globalThis.innerHeight || 0) * 0.85));
      state.heightBeforeMagnitude = page.style.height;
      page.style.height = `${Math.min(most, Math.round(before + magnitudeHost.getBoundingClientRect().height))}px`;
    } else if (!state.magnitude && state.heightBeforeMagnitude) {
      page.style.height = state.heightBeforeMagnitude;
      state.heightBeforeMagnitude = "";
    }
  }

  // --- search: every match highlighted, stepped through in reading order --------------------
  /** Find the query's matches in the view (also inside folded groups). */
  function runSearch(fromInput) {
    const graph = shownGraph();
    const positions = state.laid ? state.laid.positions : new Map();
    const where = (node) => positions.get(state.visible.standIn.get(node.id) || node.id) || { x: 0, y: 0 };
    const before = cursor.current;
    // a leaf drawn once per use (fold.js) is one node: its copies are not matches of their own
    const nodes = graph.nodes.filter((n) => originalId(n.id) === n.id);
    cursor.set(findMatches(nodes, search.value, (a, b) => where(a).y - where(b).y || where(a).x - where(b).x));
    // after a redraw (a group opened), the cursor stays on the match it was on
    if (!fromInput && before) while (cursor.matches.includes(before) && cursor.next() !== before);
    searchCount.textContent = cursor.text(search.value);
    searchPrevious.disabled = searchNext.disabled = cursor.matches.length === 0;
  }

  function stepSearch(direction) {
    if (!state.visible) return;
    if (!cursor.matches.length) runSearch(true);
    const id = direction < 0 ? cursor.previous() : cursor.next();
    searchCount.textContent = cursor.text(search.value);
    if (!id) {
      paint();
      return;
    }
    const standIn = state.visible.standIn.get(id) || id;
    if (standIn.startsWith(GROUP_PREFIX)) {
      // a match inside a folded group: open the groups around it
      const node = shownGraph().nodes.find((n) => n.id === id);
      const collapsed = collapsedSet();
      for (const path of [...collapsed]) if (node.group === path || node.group.startsWith(`${path}.`)) collapsed.delete(path);
      redraw({ refit: false });
    }
    select(id, true);
  }

  function select(id, fromUser) {
    state.selected = id || null;
    renderInspector(inspector, ctx, state.selected);
    paint();
    revealSelected();
    if (fromUser && options.onSelect) options.onSelect(state.selected);
  }

  /** Bring the selected node on screen. A leaf drawn once per use is on screen if one of its
   * copies is; else the view goes to the copy nearest to it. */
  function revealSelected() {
    const drawnId = drawnNodeId(state.selected);
    if (!drawnId || !state.laid) return;
    const viewId = state.selected.startsWith(GROUP_PREFIX) ? null : drawnIdFor(state.index, state.selected, state.view);
    const copies = (viewId && state.visible.copies.get(viewId)) || [];
    const boxes = (copies.length ? copies : [drawnId]).map((id) => state.laid.positions.get(id)).filter(Boolean);
    if (!boxes.length) return;
    const view = viewport.visibleRect();
    const cx = view.x + view.width / 2;
    const cy = view.y + view.height / 2;
    const onScreen = (b) => b.x > view.x && b.x < view.x + view.width && b.y > view.y && b.y < view.y + view.height;
    if (boxes.length > 1 && boxes.some(onScreen)) return;
    let best = boxes[0];
    for (const b of boxes) if (Math.hypot(b.x - cx, b.y - cy) < Math.hypot(best.x - cx, best.y - cy)) best = b;
    viewport.reveal(best.x, best.y);
  }

  function setStep(k, fromUser) {
    const count = state.index.steps.length;
    state.step = Math.max(0, Math.min(count, Math.trunc(Number(k) || 0)));
    if (practice) state.step = Math.min(state.step, practice.reachable()); // no step past an open question
    if (timeline) timeline.set(state.step);
    if (stepPanel) stepPanel.show(state.step);
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
    state.neighbourhood = null;
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

  /** Draw only the part of the view around a record id (else around the loss): its parents
   * and children up to NEIGHBOURHOOD_HOPS edges away, every group open. What "expand all" offers
   * when the whole view is over the layout budget. */
  function showNeighbourhood(id) {
    const whole = wholeGraph();
    const ids = new Set(whole.nodes.map((n) => n.id));
    let center = id && !id.startsWith(GROUP_PREFIX) ? drawnIdFor(state.index, id, state.view) : null;
    // a leaf drawn once per use (fold.js) is there as its copies
    if (center && !ids.has(center)) center = whole.nodes.find((n) => n.copyOf === center)?.id || null;
    if (!center) center = lossNodeId(state.index, state.view, { nodes: whole.nodes, edges: whole.edges, standIn: new Map() });
    if (!center) return;
    const near = lineage(whole, center, NEIGHBOURHOOD_HOPS, NEIGHBOURHOOD_LIMIT);
    const graph = { ...whole, nodes: whole.nodes.filter((n) => near.has(n.id)), edges: whole.edges.filter((e) => near.has(e.from) && near.has(e.to)) };
    const centerLabel = whole.nodes.find((n) => n.id === center).label;
    state.neighbourhood = { center, graph, collapsed: new Set(), centerLabel };
    redraw();
    select(id || originalId(center), true);
  }

  function leaveNeighbourhood() {
    state.neighbourhood = null;
    redraw();
    select(state.selected, false);
  }

  function setCollapsedAll(collapse) {
    state.neighbourhood = null;
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
  search.addEventListener("input", () => {
    if (!state.visible) return;
    runSearch(true);
    paint();
  });
  search.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || !state.visible) return;
    event.preventDefault();
    stepSearch(event.shiftKey ? -1 : 1);
  });
  shapeToggle.addEventListener("change", () => {
    state.hideShapes = shapeToggle.checked;
    state.neighbourhood = null;
    state.collapsed = {}; // folding is decided again on what is drawn
    redraw();
  });

  // --- the widget's height: the handle at its foot -----------------------------------------
  function setHeight(px) {
    const value = Number(px);
    if (!Number.isFinite(value) || value <= 0) {
      if (!page.style.height) page.style.height = `${DEFAULT_HEIGHT}px`;
      return;
    }
    state.autoHeight = false;
    page.style.height = `${Math.max(MIN_HEIGHT, Math.round(value))}px`;
  }
  let resizing = null;
  resizeHandle.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    event.preventDefault();
    state.autoHeight = false;
    resizing = { y: event.clientY, height: page.getBoundingClientRect().height || parseFloat(page.style.height) || DEFAULT_HEIGHT };
    resizeHandle.setPointerCapture?.(event.pointerId);
    page.classList.add("resizing");
  });
  resizeHandle.addEventListener("pointermove", (event) => {
    if (resizing) setHeight(resizing.height + event.clientY - resizing.y);
  });
  const endResize = () => {
    if (!resizing) return;
    resizing = null;
    page.classList.remove("resizing");
    if (options.onHeight) options.onHeight(parseFloat(page.style.height));
  };
  resizeHandle.addEventListener("pointerup", endResize);
  resizeHandle.addEventListener("pointercancel", endResize);
  resizeHandle.addEventListener("keydown", (event) => {
    const delta = { ArrowDown: 40, ArrowUp: -40 }[event.key];
    if (!delta) return;
    event.preventDefault();
    state.autoHeight = false;
    setHeight(page.getBoundingClientRect().height + delta);
    if (options.onHeight) options.onHeight(parseFloat(page.style.height));
  });
  resizeHandle.tabIndex = 0;

  // When the canvas gets its size (the notebook lays the output out after render) or changes
  // it, the view is framed again, unless the user has moved it; the first time the page's font
  // is known, boxes are measured again in it.
  let observer = null;
  if (globalThis.ResizeObserver) {
    let lastSize = "";
    observer = new ResizeObserver(() => {
      const { width, height } = stage.getBoundingClientRect();
      const key = `${Math.round(width)}x${Math.round(height)}`;
      if (!width || !height || key === lastSize || !state.laid) return;
      const first = !lastSize;
      lastSize = key;
      if (first) growToFit();
      if (setLabelFont(getComputedStyle(svg).fontFamily)) redraw({ refit: !viewport.state.userMoved });
      else {
        minimap.update(state.laid); // its size follows the stage's
        if (!viewport.state.userMoved) fit();
        drawOnScreen(); // a larger stage shows more of a culled drawing
      }
    });
    observer.observe(stage);
  }

  function showBanner(trace) {
    const lines = [];
    const status_ = trace.status || {};
    if (status_.error) lines.push(`The recorded code stopped with ${status_.error}; this is what ran before.`);
    if (status_.truncated) lines.push(`Recording stopped early (${status_.truncated}); the rest ran unrecorded.`);
    banner.replaceChildren(...lines.map((text) => h("div", { text })));
    const bad = nonfiniteBanner(state.index, (id) => select(id, true));
    if (bad) banner.append(bad);
    banner.hidden = lines.length === 0 && !bad;
  }

  function setTrace(trace) {
    if (trace && trace.version !== undefined && !READABLE_VERSIONS.includes(trace.version)) {
      trace = { status: { error: `this trace is in schema version ${trace.version}; this widget reads version ${SCHEMA_VERSION} (update nbgrad)` } };
    }
    recordedTrace = trace;
    // practice mode draws a copy of the trace with every gradient hidden until it is answered
    const recorded = indexTrace(trace);
    practice = null;
    if (options.practice && recorded.steps.length && !recorded.steps[0].predicted) {
      practice = createPractice(trace, recorded, { results: options.practiceResults, onResults: options.onPracticeResults });
    }
    state.index = practice ? indexTrace(practice.masked) : recorded;
    state.graphs = {};
    state.neighbourhood = null;
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
      state.laid = null;
      minimap.update(null);
      legend.textContent = "";
      fitNote.hidden = true;
      timelineHost.replaceChildren();
      renderInspector(inspector, ctx, null);
      return;
    }
    page.classList.remove("empty");
    message.replaceChildren();
    if (!state.index.nodes.size && state.view === "backward") state.view = "forward";
    // a cell that raised opens on the call that raised (unless a node was asked for), else on
    // the first NaN/Inf
    const failed = failureTarget(state.index);
    if (failed && !state.selected) [state.view, state.selected] = [failed.view, failed.id];
    if (!state.selected) state.selected = nonfiniteOrigin(state.index);
    magnitudeHost.dataset.view = ""; // the magnitude table is made again for this trace
    timeline = createTimeline(timelineHost, { index: state.index, onStep: (k) => setStep(k, true) });
    stepPanel = createStepPanel({ index: recorded, practice, wanted: !!options.practice, goToStep: (k) => setStep(k, true), onChange: () => setStep(state.step, false) });
    timelineHost.append(stepPanel.element);
    redraw();
    setStep(state.step, false);
    select(state.selected, false);
  }

  setTrace(options.trace);
  // the first fit needs the page laid out by the browser
  (globalThis.requestAnimationFrame || setTimeout)(() => {
    if (!viewport.state.userMoved) fit();
  });

  return {
    setTrace(trace) {
      options.practiceResults = []; // answers belong to the trace they were given on
      setTrace(trace);
    },
    select: (id) => select(id, false),
    setStep: (k) => setStep(k, false),
    setView: (view) => setView(view, false),
    expand: (path) => toggleGroup(path, false),
    collapse: (path) => toggleGroup(path, true),
    setHeight,
    fit,
    /** Turn practice mode on or off (answers given so far are kept in options.practiceResults). */
    setPractice(on) {
      options.practice = !!on;
      if (practice) options.practiceResults = practice.results;
      setTrace(recordedTrace);
    },
    get practice() {
      return practice;
    },
    /** Type a query and step to the next (1) or previous (-1) match (tests, scripting). */
    search(query, direction = 1) {
      search.value = query;
      runSearch(true);
      if (direction) stepSearch(direction);
      else paint();
      return { matches: cursor.matches.slice(), current: cursor.current, text: searchCount.textContent };
    },
    showNeighbourhood: (id) => showNeighbourhood(id),
    leaveNeighbourhood: () => leaveNeighbourhood(),
    setMagnitude: (on) => setMagnitude(on),
    setHideShapes(hide) {
      shapeToggle.checked = !!hide;
      shapeToggle.dispatchEvent(new Event("change"));
    },
    get state() {
      return state;
    },
    /** The whole drawing as it is now: { text (an SVG document), width, height, view }. */
    drawing: () => currentDrawing(),
    destroy() {
      drawingReporter.stop();
      if (timeline) timeline.destroy();
      if (observer) observer.disconnect();
      minimap.destroy();
      viewport.destroy();
    },
  };
}
