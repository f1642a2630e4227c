// The panel that explains the selected node: a tensor, a Function node (grad_fn), an
// AccumulateGrad, an op without a grad_fn, or a folded module group. Names in it are links
// that select what they name.

import { diffSection } from "./diff.js";
import { h } from "./dom.js";
import { FAILED_ID, failedCallPanel, failurePanel, isFailedRecord } from "./failure.js";
import { formatShape, isSummary } from "./format.js";
import { localDerivative, localGradients, toMathML } from "./formula.js";
import { GROUP_PREFIX } from "./groups.js";
import { nonfiniteSection } from "./nonfinite.js";
import { historySection } from "./history.js";
import { checkSection, jacobianSection } from "./nodecheck.js";
import { nameOf } from "./trace.js";
import { renderSavedValue, renderValue } from "./values.js";

function link(ctx, id, text) {
  if (!id) return h("span", { class: "none", text: text || "None" });
  return h("a", {
    href: "#",
    class: "link",
    "data-link": id,
    text: text ?? nameOf(ctx.index, id),
    onclick: (event) => {
      event.preventDefault();
      ctx.select(id);
    },
  });
}

function row(label, ...content) {
  return h("div", { class: "row" }, h("span", { class: "key", text: label }), h("span", { class: "val" }, ...content));
}

function section(title, ...content) {
  return h("section", null, h("h4", { text: title }), ...content);
}

function codeLine(ctx, line) {
  if (line === undefined || line === null) return null;
  const text = ctx.index.lines[String(line)];
  if (!text) return null;
  return h("div", { class: "code-line" }, h("span", { class: "line-no", text: `line ${line}` }), h("code", { text }));
}

/** One formula: typeset (MathML, for the eye) and as plain text (to copy; what a screen reader reads). */
function formulaItem(ctx, node, g) {
  const local = localDerivative(ctx.index, node, g);
  const math = toMathML(g.lhs, g.tree, g.names, g.out);
  math.setAttribute("aria-hidden", "true"); // the plain text below is what a screen reader reads
  return h(
    "li",
    { class: "formula", "data-input": g.input },
    h("div", { class: "scroll-x formula-math" }, math),
    h("div", { class: "scroll-x formula-text" }, h("code", { class: "formula-plain", text: g.text })),
    local
      ? h(
          "div",
          { class: "formula-local" },
          h("span", { class: "key", text: "local derivative " }),
          h("code", { text: local.text }),
          // (in practice mode its value is the learner's to work out: the step's words give it)
          !ctx.practice && local.value !== null && local.value !== undefined && !isSummary(local.value) && !Array.isArray(local.value) ? h("span", { class: "formula-value" }, " = ", renderValue(local.value, "float32", ctx)) : null,
        )
      : null,
  );
}

/** "x.py line 12", or "a notebook cell, line 7" (IPython compiles cells into temporary files). */
function whereDefined(file, line) {
  if (!file) return `line ${line}`;
  if (/ipykernel_\d+|<ipython-input-/.test(file)) return `a notebook cell, line ${line}`;
  return `${file.split(/[\\/]/).pop()} line ${line}`;
}

/** A custom autograd.Function's backward, as its author wrote it (read when it was recorded). */
function backwardSource(ctx, node) {
  const sources = (ctx.index.trace && ctx.index.trace.backward_sources) || {};
  const source = sources[node.name];
  if (!source) return null;
  if (!source.text) return section("its backward", h("div", { class: "note", text: `${source.function}.backward: its source could not be read.` }));
  const lines = source.text.split("\n");
  const first = source.line || 1;
  return section(
    "its backward, as written",
    h("div", { class: "note", text: `${source.function}.backward, ${whereDefined(source.file, first)}` }),
    h(
      "pre",
      { class: "scroll-x backward-source", "data-role": "backward-source" },
      lines.map((text, i) => h("span", { class: "source-line" }, h("span", { class: "line-no", text: String(first + i).padStart(4) }), h("code", { text: text || " " }))),
    ),
  );
}

function tensorSummaryLine(tensor) {
  return `${formatShape(tensor.shape)} ${tensor.dtype || ""}`.trim();
}

function accumulationTable(ctx, tensorId) {
  const items = ctx.index.accumulations.get(tensorId) || [];
  if (!items.length) return h("div", { class: "note", text: "Nothing was accumulated into .grad while recording." });
  const tensor = ctx.index.tensors.get(tensorId);
  const dtype = tensor ? tensor.dtype : "float32";
  const stepLink = (acc) =>
    acc.step !== undefined
      ? h("a", { href: "#", class: "link", text: `step ${acc.step + 1}`, onclick: (e) => (e.preventDefault(), ctx.goToStep(acc.step + 1)) })
      : "after the pass";
  return h(
    "ol",
    { class: "accumulations", "data-role": "accumulations" },
    items.map((acc, i) =>
      h(
        "li",
        { class: `accumulation${acc.step !== undefined && acc.step < ctx.step ? " done" : ""}`, "data-accumulation": i + 1 },
        h("div", { class: "acc-title" }, h("b", { text: `#${i + 1}` }), ` backward pass ${acc.pass + 1}, `, stepLink(acc)),
        h(
          "div",
          { class: "acc-values" },
          h("span", { class: "acc-part" }, h("span", { class: "op", text: "+" }), renderValue(acc.grad, dtype, ctx)),
          h("span", { class: "acc-part" }, h("span", { class: "op", text: "→ .grad =" }), renderValue(acc.total, dtype, ctx)),
        ),
      ),
    ),
  );
}

function tensorPanel(ctx, tensor) {
  const index = ctx.index;
  const isLeaf = !tensor.grad_fn;
  const op = tensor.op ? index.ops.get(tensor.op) : null;
  const uses = index.usesOfTensor.get(tensor.id) || [];
  const accumulator = index.accumulatorOf.get(tensor.id);
  const parts = [
    h("header", null, h("h3", { class: "title", text: tensor.name }), h("span", { class: `badge role-${tensor.role}`, text: tensor.role })),
    tensor.aliases && tensor.aliases.length ? row("also named", tensor.aliases.join(", ")) : null,
    row("shape", formatShape(tensor.shape)),
    row("dtype", tensor.dtype || ""),
    row("requires_grad", tensor.requires_grad ? "True" : "False"),
    row("is_leaf", isLeaf ? "True" : "False"),
    tensor.grad_fn ? row("grad_fn", link(ctx, tensor.grad_fn)) : null,
    op ? row("made by", link(ctx, op.id, op.op), op.line !== undefined ? ` at line ${op.line}` : "") : null,
    op ? codeLine(ctx, op.line) : null,
    uses.length ? row("used by", ...uses.flatMap((id, i) => [i ? ", " : "", link(ctx, id, index.ops.get(id).op)])) : null,
    section("value", h("div", { class: "value", "data-role": "value" }, renderValue(tensor.value, tensor.dtype, ctx))),
    section(".grad", h("div", { class: "value", "data-role": "grad" }, tensor.grad === undefined || tensor.grad === null ? h("span", { class: "none", text: "None" }) : renderValue(tensor.grad, tensor.dtype, ctx))),
  ];
  if (accumulator) {
    parts.push(section("accumulated into .grad", row("by", link(ctx, accumulator, "AccumulateGrad")), accumulationTable(ctx, tensor.id)));
  }
  parts.push(historySection(index.trace, tensor.id)); // a parameter of a training loop: its steps
  return parts;
}

function stepList(ctx, node) {
  const index = ctx.index;
  const stepIds = index.stepsOfNode.get(node.id) || [];
  if (!stepIds.length) return h("div", { class: "note", text: "This node did not run in a recorded backward pass." });
  const names = localGradients(index, node);
  return stepIds.map((i) => {
    const step = index.steps[i];
    const current = ctx.step === i + 1;
    if (step.predicted) {
      const sendsTo = (node.next || []).filter(Boolean).map((edge) => link(ctx, edge[0], labelOfNode(index, edge[0])));
      return h(
        "div",
        { class: `step predicted${current ? " current" : ""}`, "data-step": i + 1 },
        h("div", { class: "step-title" }, h("a", { href: "#", class: "link", text: `step ${i + 1}`, onclick: (e) => (e.preventDefault(), ctx.goToStep(i + 1)) }), " of the backward pass that backward() would run"),
        h("div", { class: "note", text: "No backward pass was recorded, so there are no gradient values: this is the order the engine follows, read from the graph." }),
        sendsTo.length ? row("sends to", ...sendsTo.flatMap((l, k) => [k ? ", " : "", l])) : null,
      );
    }
    const sent = (node.next || []).map((edge, k) => {
      const grad = (step.grads_out || [])[k];
      const target = edge ? edge[0] : null;
      const operand = names[k] ? names[k].operandName : null;
      return h(
        "li",
        { class: grad === null || grad === undefined ? "no-grad" : "" },
        h("span", { class: "value-inline" }, renderValue(grad ?? null, "float32", ctx)),
        h("span", { class: "arrow", text: " → " }),
        target ? link(ctx, target, labelOfNode(index, target)) : h("span", { class: "none", text: "None (no gradient needed)" }),
        operand ? h("span", { class: "for", text: ` for ${operand}` }) : null,
      );
    });
    return h(
      "div",
      { class: `step${current ? " current" : ""}`, "data-step": i + 1 },
      h("div", { class: "step-title" }, h("a", { href: "#", class: "link", text: `step ${i + 1}`, onclick: (e) => (e.preventDefault(), ctx.goToStep(i + 1)) }), ` of backward pass ${step.pass + 1}${step.freed ? ", then its saved buffers were freed" : ""}`),
      row("grad in", ...(step.grads_in || []).map((g) => renderValue(g, "float32", ctx))),
      (node.next || []).length ? h("div", { class: "sent" }, h("span", { class: "key", text: "sent" }), h("ul", null, sent)) : null,
    );
  });
}

function labelOfNode(index, id) {
  const node = index.nodes.get(id);
  if (!node) return id;
  if (node.variable && index.tensors.has(node.variable)) return `AccumulateGrad (${index.tensors.get(node.variable).name})`;
  return node.name;
}

/** How PyTorch shows a saved value: `_saved_self`, or `saved_tensors[0]` for a custom Function. */
function savedName(name) {
  const custom = /^tensors\[(\d+)\]$/.exec(name);
  return custom ? `saved_tensors[${custom[1]}]` : `_saved_${name}`;
}

function savedList(ctx, node) {
  const index = ctx.index;
  const entries = Object.entries(node.saved || {});
  const freed = node.freed_at !== undefined && node.freed_at !== null;
  if (!entries.length && freed) return h("div", { class: "note", text: "Freed: a backward pass without retain_graph=True released them." });
  if (!entries.length) return h("div", { class: "note", text: "Nothing: its backward needs no saved values." });
  // One entry per saved value: its PyTorch name, then its value, which wraps to a line of its
  // own (the whole panel width) when it is wider than what is left beside the name.
  const freedNote = freed ? (node.freed_at < 0 || ctx.step > node.freed_at ? "freed (a backward pass without retain_graph=True released them)" : `freed after step ${node.freed_at + 1}`) : null;
  return h(
    "div",
    { class: "saved", "data-role": "saved" },
    freedNote ? h("div", { class: "note saved-freed", text: freedNote }) : null,
    entries.map(([name, saved]) => {
      const tensor = saved.tensor ? index.tensors.get(saved.tensor) : null;
      const value = tensor ? tensor.value : saved.value;
      return h(
        "div",
        { class: "saved-entry", "data-saved": name },
        h("span", { class: "saved-key", text: savedName(name) }),
        h("span", { class: "saved-val" }, tensor ? link(ctx, tensor.id, tensor.name) : null, tensor ? " = " : "", tensor ? renderValue(value ?? null, tensor.dtype, ctx) : renderSavedValue(value ?? null, ctx)),
      );
    }),
  );
}

function functionPanel(ctx, node) {
  const index = ctx.index;
  const op = node.op ? index.ops.get(node.op) : null;
  const outputs = index.outputsOfNode.get(node.id) || (op ? op.outputs : []);
  const gradients = localGradients(index, node);
  const parts = [
    h("header", null, h("h3", { class: "title", text: node.name }), h("span", { class: "badge", text: "Function" })),
    op ? row("made by", link(ctx, op.id, op.op), op.line !== undefined ? ` at line ${op.line}` : "") : row("made by", h("span", { class: "none", text: node.observed === false ? "outside the recording" : "?" })),
    op ? codeLine(ctx, op.line) : null,
    op && op.module ? row("in module", `${op.module}${index.modules[op.module] ? ` (${index.modules[op.module]})` : ""}`) : null,
    op && index.opsInside.has(op.id) ? row("its forward ran", ...index.opsInside.get(op.id).flatMap((id, i) => [i ? ", " : "", link(ctx, id, index.ops.get(id).op)])) : null,
    outputs.length ? row("grad_fn of", ...outputs.flatMap((id, i) => [i ? ", " : "", link(ctx, id)])) : null,
    section("saved for backward", savedList(ctx, node)),
    backwardSource(ctx, node),
  ];
  if (gradients.some(Boolean)) {
    parts.push(
      section(
        "gradients it sends back",
        h(
          "ul",
          { class: "formulas", "data-role": "formulas" },
          gradients.filter(Boolean).map((g) => formulaItem(ctx, node, g)),
        ),
      ),
    );
  }
  parts.push(...[jacobianSection(ctx, node), checkSection(ctx, node)].filter(Boolean)); // nodecheck.js
  parts.push(
    section(
      "next_functions",
      h(
        "ol",
        { class: "next", start: 0 },
        (node.next || []).map((edge) => h("li", null, edge ? link(ctx, edge[0], labelOfNode(index, edge[0])) : h("span", { class: "none", text: "None" }), edge ? `, ${edge[1]}` : "")),
      ),
    ),
    section("in the backward pass", ...[stepList(ctx, node)].flat()),
  );
  return parts;
}

function accumulatePanel(ctx, node) {
  const tensor = ctx.index.tensors.get(node.variable);
  return [
    h("header", null, h("h3", { class: "title", text: "AccumulateGrad" }), h("span", { class: "badge", text: "leaf" })),
    row("variable", link(ctx, node.variable)),
    tensor ? row("is", `${tensorSummaryLine(tensor)}, requires_grad=True`) : null,
    tensor ? section(".grad", h("div", { class: "value", "data-role": "grad" }, renderValue(tensor.grad ?? null, tensor.dtype, ctx))) : null,
    section("contributions, in order", accumulationTable(ctx, node.variable)),
    section("in the backward pass", ...[stepList(ctx, node)].flat()),
  ];
}

function opPanel(ctx, op) {
  return [
    h("header", null, h("h3", { class: "title", text: op.op }), h("span", { class: "badge", text: "op" })),
    codeLine(ctx, op.line),
    row("inputs", ...(op.inputs || []).flatMap((input, i) => [i ? ", " : "", typeof input === "string" ? link(ctx, input) : h("code", { text: JSON.stringify(input.const) })])),
    row("outputs", ...(op.outputs || []).flatMap((id, i) => [i ? ", " : "", link(ctx, id)])),
    h("div", { class: "note", text: "No grad_fn: none of its inputs required grad (or grad mode was off)." }),
  ];
}

function groupPanel(ctx, path) {
  // a group folded by fold.js (a loop, a chain) is not a module: it says what it is instead
  const note = ctx.groupNote ? ctx.groupNote(path) : null;
  return [
    h("header", null, h("h3", { class: "title", text: path }), h("span", { class: "badge", text: note ? "folded" : "module" })),
    note ? row("is", note) : ctx.index.modules[path] ? row("class", ctx.index.modules[path]) : null,
    h("button", { type: "button", class: "expand", text: "expand this group", onclick: () => ctx.expand(path) }),
  ];
}

function emptyPanel() {
  return [h("div", { class: "hint", text: "Click a node to see its value, what it saved for backward, and the gradients that flowed through it." })];
}

/** Fill the inspector for the selected id. */
export function renderInspector(panel, ctx, id) {
  const index = ctx.index;
  let parts;
  if (!id) parts = emptyPanel();
  else if (id.startsWith(GROUP_PREFIX)) parts = groupPanel(ctx, id.slice(GROUP_PREFIX.length));
  else if (id === FAILED_ID) parts = failedCallPanel(index, ctx);
  else if (index.tensors.has(id)) parts = tensorPanel(ctx, index.tensors.get(id));
  else if (index.nodes.has(id)) {
    const node = index.nodes.get(id);
    parts = node.variable ? accumulatePanel(ctx, node) : functionPanel(ctx, node);
  } else if (index.ops.has(id)) {
    const op = index.ops.get(id);
    parts = op.node && index.nodes.has(op.node) ? functionPanel(ctx, index.nodes.get(op.node)) : opPanel(ctx, op);
  } else parts = [h("div", { class: "note", text: `Nothing called ${id} in this trace.` })];
  // the call that raised: its message right under the title (failure.js)
  if (id !== FAILED_ID && isFailedRecord(index, id)) parts.splice(1, 0, failurePanel(index));
  parts = [nonfiniteSection(index, id), ...parts]; // where a NaN/Inf first appeared (nonfinite.js)
  panel.replaceChildren(...[diffSection(ctx, id), ...parts].filter(Boolean)); // a diff: both sides first
  panel.setAttribute("data-selected", id || "");
  ensureResizeHandle(panel);
  markWideArrays(panel);
}

/** Above each array wider than the panel, a line that says it scrolls (scrollbars may be hidden). */
export function markWideArrays(panel) {
  for (const box of panel.querySelectorAll(".matrix-scroll")) {
    const wide = box.scrollWidth > box.clientWidth + 1;
    const hint = box.previousElementSibling && box.previousElementSibling.classList.contains("more-hint") ? box.previousElementSibling : null;
    if (wide && !hint) box.before(h("div", { class: "more-hint", text: `${box.getAttribute("data-columns")} columns, scroll sideways →` }));
    else if (!wide && hint) hint.remove();
  }
}

// --- a panel the user can widen ---------------------------------------------------------------

const MIN_WIDTH = 220; // px; the graph keeps at least GRAPH_MIN (style.css caps the panel too)
const GRAPH_MIN = 160;

/** A handle on the inspector's left edge: drag it (or focus it and press ← →) to resize. */
export function ensureResizeHandle(panel) {
  const parent = panel.parentElement;
  if (!parent) return null;
  const before = panel.previousElementSibling;
  if (before && before.classList.contains("inspector-resize")) return before;
  const setWidth = (width) => {
    const room = parent.getBoundingClientRect().width - GRAPH_MIN;
    const clamped = Math.round(Math.max(MIN_WIDTH, room > MIN_WIDTH ? Math.min(width, room) : width));
    panel.style.flexBasis = `${clamped}px`;
    panel.style.width = `${clamped}px`;
    handle.setAttribute("aria-valuenow", String(clamped));
    markWideArrays(panel);
  };
  const handle = h("div", {
    class: "inspector-resize",
    role: "separator",
    tabindex: "0",
    "aria-orientation": "vertical",
    "aria-label": "inspector width",
    title: "drag to widen the inspector; double-click for its first width",
    "data-role": "inspector-resize",
  });
  handle.addEventListener("pointerdown", (event) => {
    event.preventDefault();
    handle.setPointerCapture?.(event.pointerId);
    const right = panel.getBoundingClientRect().right;
    const move = (e) => setWidth(right - e.clientX);
    const up = () => {
      handle.removeEventListener("pointermove", move);
      handle.removeEventListener("pointerup", up);
      handle.classList.remove("dragging");
    };
    handle.classList.add("dragging");
    handle.addEventListener("pointermove", move);
    handle.addEventListener("pointerup", up);
  });
  handle.addEventListener("keydown", (event) => {
    const step = event.shiftKey ? 80 : 20;
    const width = panel.getBoundingClientRect().width;
    if (event.key === "ArrowLeft") setWidth(width + step);
    else if (event.key === "ArrowRight") setWidth(width - step);
    else return;
    event.preventDefault();
  });
  handle.addEventListener("dblclick", () => {
    panel.style.flexBasis = "";
    panel.style.width = "";
  });
  parent.insertBefore(handle, panel);
  return handle;
}
