// Practice mode: the learner works the backward pass out by hand, one step at a time.
//
// The widget draws a copy of the trace in which every gradient is hidden (maskTrace); the
// timeline walks the engine's steps, and at each step the learner types what the node sends on
// each edge, next to that edge's formula. An answer is checked against the recorded value with
// TOLERANCE, then the value is revealed in the copy (so the inspector shows it too); after a
// wrong answer, or on "show me", the formula is shown with the numbers put in. The timeline
// cannot pass a step whose questions are not answered yet: what the next node gets is the sum of
// what was sent to it, and that would give the answers away.
//
// Without practice mode, the same panel under the timeline says the current step's chain rule
// in words (words.js).

import { h } from "./dom.js";
import { formatShape, isSummary, shapeOf, toNumber } from "./format.js";
import { chainWords, formulaValues, outputNames, pluggedIn, targetText, valueText } from "./words.js";
import { localGradients, operand } from "./formula.js";

/** An answer is right when every element is within atol + rtol·|recorded| (NumPy's isclose). */
export const TOLERANCE = { rtol: 1e-3, atol: 1e-4 };
/** Gradients with more elements than this are revealed, not asked: nobody types 17 numbers. */
export const MAX_ASKED_ELEMENTS = 16;
/** What the inspector shows in place of a gradient not yet answered. */
export const HIDDEN = "hidden: answer this step first";

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

function numberOf(token) {
  const t = token.replace(/\u2212/g, "-"); // a typographic minus, pasted from the formula
  if (NUMBER.test(t)) return Number(t);
  const fraction = /^([^/]+)\/([^/]+)$/.exec(t); // 1/3: a learner's exact answer
  if (fraction && NUMBER.test(fraction[1]) && NUMBER.test(fraction[2])) return Number(fraction[1]) / Number(fraction[2]);
  const special = { nan: NaN, inf: Infinity, "+inf": Infinity, "-inf": -Infinity }[t.toLowerCase()];
  return special === undefined ? null : special;
}

/**
 * What the learner typed, as a number or nested lists: "4", "-0.5", "1/3", "1 2 3" or
 * "[1, 2, 3]" (a vector), "[1, 2; 3, 4]" or "[[1, 2], [3, 4]]" (a matrix, rows split by ";" or
 * a new line). Returns { value } or { error } (a sentence saying what is wrong).
 */
export function parseAnswer(text) {
  let s = String(text ?? "").trim();
  const wrapped = /^tensor\(([\s\S]*)\)$/.exec(s); // pasted from a print(): tensor([1., 2.])
  if (wrapped) s = wrapped[1].trim();
  if (!s) return { error: "Type a number, or the numbers of an array (1 2 3, or [1, 2; 3, 4] for a matrix)." };
  let rows;
  let bracketed = false;
  if (/^\[\s*\[/.test(s)) {
    if (!/\]\s*\]$/.test(s)) return { error: "A [ is not closed." };
    rows = s.replace(/^\[\s*\[/, "").replace(/\]\s*\]$/, "").split(/\]\s*,?\s*\[/);
    bracketed = true;
  } else {
    if (s.startsWith("[") !== s.endsWith("]")) return { error: s.startsWith("[") ? "A [ is not closed." : "A ] has no [ before it." };
    if (s.startsWith("[")) {
      s = s.slice(1, -1);
      bracketed = true;
    }
    if (/[[\]]/.test(s)) return { error: "Write a matrix as [1, 2; 3, 4] or [[1, 2], [3, 4]]." };
    rows = s.split(/[;\n]/);
  }
  rows = rows.map((r) => r.trim());
  if (rows.length > 1 && rows[rows.length - 1] === "") rows.pop(); // "1 2; 3 4;"
  const parsed = [];
  for (const row of rows) {
    const tokens = row.split(/[\s,]+/).filter(Boolean);
    if (!tokens.length) return { error: "An empty row: put numbers between the semicolons." };
    const numbers = [];
    for (const token of tokens) {
      const value = numberOf(token);
      if (value === null) return { error: `"${token}" is not a number.` };
      numbers.push(value);
    }
    parsed.push(numbers);
  }
  if (parsed.length > 1) {
    const width = parsed[0].length;
    const bad = parsed.findIndex((row) => row.length !== width);
    if (bad >= 0) return { error: `Row ${bad + 1} has ${parsed[bad].length} numbers, row 1 has ${width}: every row needs as many.` };
    return { value: parsed };
  }
  if (parsed[0].length === 1 && !bracketed) return { value: parsed[0][0] };
  return { value: parsed[0] };
}

const flatten = (v) => (Array.isArray(v) ? v.flatMap(flatten) : [v]);
const squeezed = (shape) => shape.filter((n) => n !== 1);

/** How many numbers a value of the trace holds (a summary: its shape's). */
export function sizeOf(value) {
  if (value === null || value === undefined) return 0;
  if (isSummary(value)) return (value.shape || []).reduce((a, b) => a * b, 1);
  return flatten(value).length;
}

/**
 * Check an answer (a parsed value) against the recorded one. Shapes must agree up to sizes of 1
 * (a [1, 3] gradient may be typed as 1 2 3). Returns { right, message }.
 */
export function checkAnswer(value, expected, tolerance = TOLERANCE) {
  const want = flatten(expected).map(toNumber);
  const got = flatten(value).map(toNumber);
  const wantShape = squeezed(shapeOf(expected));
  const gotShape = squeezed(shapeOf(value));
  if (JSON.stringify(wantShape) !== JSON.stringify(gotShape)) {
    const shape = formatShape(shapeOf(expected));
    return { right: false, message: `the gradient is ${shape === "scalar" ? "one number" : `${shape} (${want.length} numbers)`}; you typed ${got.length === 1 ? "one number" : `${formatShape(shapeOf(value))} (${got.length} numbers)`}` };
  }
  const close = (a, e) => (Number.isNaN(e) ? Number.isNaN(a) : a === e || Math.abs(a - e) <= tolerance.atol + tolerance.rtol * Math.abs(e));
  const wrong = want.map((e, i) => (close(got[i], e) ? -1 : i)).filter((i) => i >= 0);
  if (!wrong.length) return { right: true, message: "right" };
  if (want.length === 1) return { right: false, message: "" }; // the verdict says it all
  return { right: false, message: `${wrong.length} of ${want.length} numbers are not right (the first is number ${wrong[0] + 1})` };
}

/** For each step (0-based), the edges the learner is asked about, or shown. */
export function questionsOf(index) {
  return index.steps.map((record, i) => {
    const node = index.nodes.get(record.node);
    const gradients = node ? localGradients(index, node) : [];
    const edges = ((node && node.next) || [])
      .map((edge, k) => {
        if (!edge) return null;
        const expected = (record.grads_out || [])[k] ?? null;
        const asked = expected !== null && !isSummary(expected) && sizeOf(expected) <= MAX_ASKED_ELEMENTS;
        const target = index.nodes.get(edge[0]);
        const label = target && target.variable && index.tensors.has(target.variable) ? `AccumulateGrad (${index.tensors.get(target.variable).name})` : target ? target.name : edge[0];
        return { k, target: edge[0], label, words: targetText(index, edge[0]), gradient: gradients[k] || null, expected, asked };
      })
      .filter(Boolean);
    return { step: i, node, record, edges };
  });
}

/** A copy of the trace with every gradient replaced by HIDDEN (values of the forward pass and
 * saved buffers stay: the learner needs them). */
export function maskTrace(trace) {
  const masked = JSON.parse(JSON.stringify(trace));
  const hide = (v) => (v === null || v === undefined ? v : HIDDEN);
  for (const step of masked.steps || []) {
    step.grads_in = (step.grads_in || []).map(hide);
    step.grads_out = (step.grads_out || []).map(hide);
  }
  for (const tensor of masked.tensors || []) if (tensor.grad !== undefined && tensor.grad !== null) tensor.grad = HIDDEN;
  for (const acc of masked.accumulations || []) {
    acc.grad = hide(acc.grad);
    acc.total = hide(acc.total);
  }
  return masked;
}

/**
 * The learner's answers over one trace. `index` is the index of the trace as recorded,
 * `masked` the copy the widget draws (revealed as the answers come). `results` restores earlier
 * answers (the widget's practice_results); `onResults(results)` is told of each new one.
 */
export function createPractice(trace, index, { results = [], onResults = null, tolerance = TOLERANCE } = {}) {
  const questions = questionsOf(index);
  const masked = maskTrace(trace);
  const answers = new Map(); // "step:edge" -> { answer (text or null: shown without one), right }
  const key = (i, k) => `${i}:${k}`;

  for (const r of Array.isArray(results) ? results : []) {
    const q = questions[r.step - 1];
    const edge = q && q.edges.find((e) => e.k === r.edge && e.asked);
    if (edge && q.node && q.node.name === r.node) answers.set(key(q.step, edge.k), { answer: r.answer ?? null, right: !!r.right });
  }

  /** The last timeline position the learner may go to: the first step with an open question. */
  function reachable() {
    for (const q of questions) if (q.edges.some((e) => e.asked && !answers.has(key(q.step, e.k)))) return q.step + 1;
    return questions.length;
  }

  /** Put the values the learner has earned into the masked copy. */
  function reveal() {
    const reached = reachable();
    const finished = questions.every((q) => q.edges.every((e) => !e.asked || answers.has(key(q.step, e.k))));
    const steps = trace.steps || [];
    masked.steps.forEach((step, i) => {
      if (i >= reached) return;
      step.grads_in = (steps[i].grads_in || []).slice();
      const q = questions[i];
      step.grads_out = (steps[i].grads_out || []).map((v, k) => {
        const edge = q.edges.find((e) => e.k === k);
        return !edge || !edge.asked || answers.has(key(i, k)) ? v : HIDDEN;
      });
    });
    const accumulations = trace.accumulations || [];
    const open = new Set();
    (masked.accumulations || []).forEach((acc, j) => {
      const step = accumulations[j].step;
      if ((step !== undefined && step !== null && step < reached) || finished) {
        acc.grad = accumulations[j].grad;
        acc.total = accumulations[j].total;
      } else open.add(acc.tensor);
    });
    const summed = new Set(accumulations.map((a) => a.tensor));
    (masked.tensors || []).forEach((tensor, j) => {
      const original = trace.tensors[j];
      if (finished || (summed.has(tensor.id) && !open.has(tensor.id))) tensor.grad = original.grad;
    });
  }

  function resultsList() {
    const list = [];
    for (const q of questions) {
      for (const e of q.edges) {
        const a = answers.get(key(q.step, e.k));
        if (!a) continue;
        list.push({ step: q.step + 1, node: q.node.name, node_id: q.node.id, edge: e.k, target: e.label, input: e.gradient ? e.gradient.operandName : null, answer: a.answer, expected: e.expected, right: a.right });
      }
    }
    return list;
  }

  function record(i, k, entry) {
    answers.set(key(i, k), entry);
    reveal();
    if (onResults) onResults(resultsList());
  }

  reveal();
  return {
    masked,
    questions,
    tolerance,
    reachable,
    answerOf: (i, k) => answers.get(key(i, k)) || null,
    /** Check typed text for edge k of step i (0-based); a text that is not a number is not counted. */
    answer(i, k, text) {
      const edge = questions[i] && questions[i].edges.find((e) => e.k === k);
      if (!edge || !edge.asked) return { error: "Nothing is asked on this edge." };
      if (answers.has(key(i, k))) return { ...answers.get(key(i, k)), message: "already answered" };
      const parsed = parseAnswer(text);
      if (parsed.error) return parsed;
      const verdict = checkAnswer(parsed.value, edge.expected, tolerance);
      record(i, k, { answer: String(text).trim(), right: verdict.right });
      return verdict;
    },
    /** "show me": reveal edge k of step i without an answer (it counts as not right). */
    showMe(i, k) {
      if (!answers.has(key(i, k))) record(i, k, { answer: null, right: false });
    },
    get results() {
      return resultsList();
    },
    score() {
      const list = resultsList();
      return { right: list.filter((r) => r.right).length, asked: list.length, total: questions.reduce((n, q) => n + q.edges.filter((e) => e.asked).length, 0), wrong: list.filter((r) => !r.right) };
    },
  };
}

// --- the panel under the timeline ----------------------------------------------------------

function toleranceText(tolerance) {
  return `An answer is right when each number is within ${tolerance.atol} + ${tolerance.rtol} × |recorded value| of the recorded one (rtol ${tolerance.rtol}, atol ${tolerance.atol}).`;
}

/**
 * The panel under the timeline. `index` is the recorded trace's index; `practice` the learner's
 * answers (createPractice) or null; `goToStep(k)` moves the timeline; `onChange()` is called
 * when an answer revealed something (the widget shows it again).
 */
export function createStepPanel({ index, practice = null, wanted = false, goToStep, onChange }) {
  const element = h("div", { class: practice || wanted ? "step-panel practice" : "step-panel", "data-role": practice || wanted ? "practice" : "step-words" });
  let current = 0;
  let focusAfter = null; // what to focus once the panel is drawn again: [step, edge] or "next"

  function wordsLine(i) {
    return h("p", { class: "chain-words", "data-role": "chain-words", text: chainWords(index, i) });
  }

  function showWords(step) {
    element.hidden = step === 0 || !index.steps.length || !!index.steps[0].predicted;
    element.replaceChildren(...(element.hidden ? [] : [wordsLine(step - 1)]));
  }

  function scoreBar() {
    const score = practice.score();
    const wrongItems = score.wrong.map((r, j) =>
      h("span", null, j ? ", " : "", h("a", { href: "#", class: "link", "data-wrong-step": r.step, text: `step ${r.step} → ${r.input || r.target}`, onclick: (e) => (e.preventDefault(), goToStep(r.step)) })),
    );
    return h(
      "div",
      { class: "practice-head" },
      h("b", { text: "Practice" }),
      h("span", { class: "practice-score", "data-role": "score", text: `score ${score.right} / ${score.asked}${score.asked < score.total ? ` (${score.total - score.asked} to go)` : " (all answered)"}` }),
      h("span", { class: "practice-wrong", "data-role": "wrong-list" }, score.wrong.length ? "got wrong: " : "none wrong so far", ...wrongItems),
      h("div", { class: "practice-tolerance", "data-role": "tolerance", text: toleranceText(practice.tolerance) }),
    );
  }

  function edgeRow(q, edge) {
    const i = q.step;
    const given = practice.answerOf(i, edge.k);
    const formula = edge.gradient ? edge.gradient.text : `∂L/∂(input ${edge.k}) (computed by ${q.node.name}'s backward)`;
    const head = h("div", { class: "practice-formula" }, h("code", { class: "formula-plain", text: formula }), h("span", { class: "practice-to", text: ` → sent to ${edge.words}` }));
    if (!edge.asked) {
      const why = edge.expected === null ? "no gradient (None) goes this way" : `${sizeOf(edge.expected)} numbers: shown, not asked`;
      return h("li", { class: "practice-edge shown", "data-edge": edge.k }, head, h("div", { class: "practice-verdict", text: `${why}${edge.expected === null ? "" : `: ${valueText(edge.expected)}`}` }));
    }
    const input = h("input", { type: "text", class: "practice-input", "data-role": "answer", "aria-label": `what ${q.node.name} sends to ${edge.words}`, placeholder: "e.g. 4 or [1, 2; 3, 4]", autocomplete: "off", spellcheck: "false" });
    const verdict = h("div", { class: "practice-verdict", "data-role": "verdict", "aria-live": "polite" });
    const working = h("div", { class: "practice-working", "data-role": "working", hidden: true });
    const showWorking = () => {
      const text = edge.gradient ? pluggedIn(edge.gradient, formulaValues(index, q.node), (q.record.grads_in || [])[0]) : null;
      working.textContent = text ? `${text} = ${valueText(edge.expected)}` : `recorded: ${valueText(edge.expected)}`;
      working.hidden = false;
    };
    const check = h("button", { type: "button", class: "practice-check", "data-role": "check", text: "check" });
    const showMe = h("button", { type: "button", class: "practice-show", "data-role": "show-me", text: "show me", title: "reveal this gradient with the formula's numbers put in" });
    if (given) {
      input.value = given.answer ?? "";
      input.readOnly = true;
      check.disabled = true;
      verdict.className = `practice-verdict ${given.right ? "right" : "wrong"}`;
      verdict.textContent = given.answer === null ? `shown: ${valueText(edge.expected)}` : given.right ? `✓ right: the recorded value is ${valueText(edge.expected)}` : `✗ not right: the recorded value is ${valueText(edge.expected)}`;
      if (!given.right) showWorking();
      showMe.textContent = "show the working";
      showMe.onclick = showWorking;
    } else {
      const submit = () => {
        const result = practice.answer(i, edge.k, input.value);
        if (result.error) {
          verdict.className = "practice-verdict error";
          verdict.textContent = result.error;
          return;
        }
        focusAfter = nextFocus(q, edge.k);
        done(result.right || !result.message ? null : `✗ ${result.message}`);
      };
      check.onclick = submit;
      input.addEventListener("keydown", (event) => {
        if (event.key === "Enter") {
          event.preventDefault();
          submit();
        }
      });
      showMe.onclick = () => {
        practice.showMe(i, edge.k);
        focusAfter = nextFocus(q, edge.k);
        done(null);
      };
    }
    return h("li", { class: "practice-edge", "data-edge": edge.k }, head, h("div", { class: "practice-answer" }, input, check, showMe), verdict, working);
  }

  // after an answer: the next open field of this step, else the "next step" button
  function nextFocus(q, k) {
    const open = q.edges.find((e) => e.asked && e.k !== k && !practice.answerOf(q.step, e.k));
    return open ? [q.step, open.k] : "next";
  }

  let lastMessage = null; // why the answer just given is not right (shown once)
  function done(message) {
    lastMessage = message;
    if (onChange) onChange(); // the widget shows the step again, this panel with it
    else show(current);
  }

  function showPractice(step) {
    const parts = [scoreBar()];
    const count = index.steps.length;
    if (!count || index.steps[0].predicted) {
      parts.push(h("p", { class: "note", text: "Nothing to practise: no backward pass was recorded. Call backward() in the cell (or use --backward NAME)." }));
      element.replaceChildren(...parts);
      return;
    }
    if (step === 0) {
      const first = practice.questions[0];
      parts.push(
        h("p", { class: "practice-intro", text: `Work out the backward pass by hand: at each of the ${count} steps, type what the node sends back on each edge. It starts at ${first.node.name}, with dL/d${operand(outputNames(index, first.node)[0] || "output")} = ${valueText((first.record.grads_in || [])[0])}.` }),
        h("button", { type: "button", class: "practice-next", "data-role": "practice-start", text: "start ▶", onclick: () => goToStep(1) }),
      );
      element.replaceChildren(...parts);
      return;
    }
    const q = practice.questions[step - 1];
    const outs = q.node.variable ? [targetText(index, q.node.id)] : outputNames(index, q.node); // a leaf: its name
    const got = (q.record.grads_in || []).map((g, k) => `dL/d${operand(outs[k] || "output")} = ${valueText(g)}`).join(", ");
    const asked = q.edges.filter((e) => e.asked);
    const open = asked.filter((e) => !practice.answerOf(q.step, e.k));
    const title = q.node.variable ? `AccumulateGrad (${targetText(index, q.node.id)})` : targetText(index, q.node.id);
    parts.push(
      h("p", { class: "practice-got", "data-role": "practice-got" }, h("b", { text: `Step ${step} of ${count}: ` }), `${title} got ${got}.`, asked.length ? " What does it send on each edge?" : " Nothing to answer here."),
    );
    if (q.edges.length) parts.push(h("ul", { class: "practice-edges" }, q.edges.map((e) => edgeRow(q, e))));
    if (lastMessage && open.length !== asked.length) parts.push(h("div", { class: "practice-message", text: lastMessage }));
    lastMessage = null;
    if (!open.length) {
      parts.push(wordsLine(q.step));
      if (step < count) parts.push(h("button", { type: "button", class: "practice-next", "data-role": "practice-next", text: "next step ▶", onclick: () => goToStep(step + 1) }));
      else parts.push(h("p", { class: "practice-end", "data-role": "practice-end", text: "That was the last step: the backward pass is done." }));
    }
    element.replaceChildren(...parts);
    const target = focusAfter;
    focusAfter = null;
    if (target === "next") element.querySelector('[data-role="practice-next"]')?.focus();
    else if (target) element.querySelector(`[data-edge="${target[1]}"] input`)?.focus();
  }

  function show(step) {
    current = step;
    if (practice) showPractice(step);
    else if (wanted) {
      element.replaceChildren(h("p", { class: "note", text: "Nothing to practise: no backward pass was recorded. Call backward() in the cell (or use --backward NAME)." }));
    } else showWords(step);
  }

  return { element, show };
}
