// The backward timeline: positions 0..N over the engine's steps (0: before backward; k: step k
// has just run). What lights up at a position, and the controls that move it.

import { h } from "./dom.js";

export function clampStep(step, count) {
  const k = Math.trunc(Number(step) || 0);
  return Math.max(0, Math.min(count, k));
}

/** The text under the controls. */
export function stepLabel(index, step) {
  const count = index.steps.length;
  if (!count) return "no backward pass was recorded";
  if (step === 0) return index.steps[0].predicted ? `no backward recorded: step through the ${count} steps backward() would run` : `before backward (${count} steps)`;
  const record = index.steps[step - 1];
  const node = index.nodes.get(record.node);
  let name = node ? node.name : record.node;
  if (node && node.variable && index.tensors.has(node.variable)) name += ` (${index.tensors.get(node.variable).name})`;
  const passes = index.passes.length > 1 ? `, pass ${record.pass + 1}` : "";
  if (record.predicted) return `step ${step} of ${count}: ${name} (the order backward() would follow; none was recorded)`;
  return `step ${step} of ${count}: ${name}${passes}`;
}

/** What lights up at a position, in backward-view ids: the node that ran, the nodes that ran
 * before it, and the edges it sent a gradient along ([from, to, slot]). */
export function stepHighlight(index, step) {
  const done = new Set();
  if (step <= 0 || step > index.steps.length) return { current: null, done, edges: [] };
  for (let i = 0; i < step - 1; i++) done.add(index.steps[i].node);
  const record = index.steps[step - 1];
  const node = index.nodes.get(record.node);
  const edges = [];
  ((node && node.next) || []).forEach((edge, k) => {
    const grad = (record.grads_out || [])[k];
    if (edge && grad !== null && grad !== undefined) edges.push([node.id, edge[0], k]);
  });
  return { current: record.node, done, edges };
}

/** The same highlight in forward-view ids: the op that made the node (or the leaf of an
 * AccumulateGrad), and the edges from the inputs that received a gradient. */
export function forwardHighlight(index, highlight) {
  const map = (id) => {
    const node = index.nodes.get(id);
    if (!node) return null;
    return node.op || node.variable || null;
  };
  const done = new Set([...highlight.done].map(map).filter(Boolean));
  const current = highlight.current ? map(highlight.current) : null;
  const edges = [];
  const node = highlight.current ? index.nodes.get(highlight.current) : null;
  const op = node && node.op ? index.ops.get(node.op) : null;
  if (op) {
    for (const [, , slot] of highlight.edges) {
      const input = (op.inputs || [])[slot];
      if (typeof input === "string") edges.push([input, op.id, slot]);
    }
  }
  return { current, done, edges };
}

/** The controls: |< < [label] > >| play. `onStep(k)` is called with the new position. */
export function createTimeline(container, { index, onStep, interval = 800 }) {
  const count = index.steps.length;
  let step = 0;
  let timer = null;
  const label = h("span", { class: "step-label", "data-role": "step-label" });
  const slider = h("input", { type: "range", min: 0, max: count, value: 0, class: "step-slider", "aria-label": "backward step" });
  const button = (text, title, role, action) =>
    h("button", { type: "button", class: "tl-button", title, "data-role": role, text, onclick: action });
  const play = button("▶ play", "play the backward pass", "play", () => (timer ? stop() : start()));

  function go(k, fromUser = true) {
    const next = clampStep(k, count);
    if (next === step && fromUser) return;
    step = next;
    label.textContent = stepLabel(index, step);
    slider.value = String(step);
    if (fromUser) onStep(step);
  }
  function start() {
    if (step >= count) go(0);
    play.textContent = "❚❚ pause";
    timer = setInterval(() => {
      if (step >= count) return stop();
      go(step + 1);
    }, interval);
  }
  function stop() {
    clearInterval(timer);
    timer = null;
    play.textContent = "▶ play";
  }
  slider.addEventListener("input", () => go(Number(slider.value)));

  const bar = h(
    "div",
    { class: "timeline", "data-role": "timeline" },
    h("span", { class: "tl-title", text: "backward" }),
    button("|◀", "before the first step", "first", () => go(0)),
    button("◀", "previous step", "prev", () => go(step - 1)),
    slider,
    button("▶", "next step", "next", () => go(step + 1)),
    button("▶|", "after the last step", "last", () => go(count)),
    play,
    label,
  );
  if (!count) for (const el of bar.querySelectorAll("button, input")) el.disabled = true;
  container.replaceChildren(bar);
  go(0, false);
  label.textContent = stepLabel(index, 0);
  return {
    get step() {
      return step;
    },
    set(k) {
      go(k, false);
    },
    stop,
    destroy: stop,
  };
}

