import { describe, expect, it } from "vitest";
import { createApp } from "../src/app.js";
import { HIDDEN, TOLERANCE, checkAnswer, createPractice, parseAnswer, questionsOf } from "../src/practice.js";
import { indexTrace } from "../src/trace.js";
import widget from "../src/widget.js";
import { chainWords, evaluate, pluggedIn, valueText } from "../src/words.js";
import { localGradients } from "../src/formula.js";
import { simpleTrace } from "./fixtures.js";

/** e = (a + b) * d with a = 2, b = 3, d = 4, and the readable formulas the kernel writes. */
function traceWithFormulas() {
  const trace = simpleTrace();
  trace.readable = { r0: { self: ["g"], other: ["g"] }, r1: { self: ["mul", ["v", "other"], ["g"]], other: ["mul", ["v", "self"], ["g"]] } };
  trace.nodes.find((n) => n.id === "n0").readable = "r0";
  trace.nodes.find((n) => n.id === "n3").readable = "r1";
  return trace;
}

describe("reading a typed answer", () => {
  it("reads numbers, fractions, vectors and matrices", () => {
    expect(parseAnswer(" 4 ")).toEqual({ value: 4 });
    expect(parseAnswer("-0.5")).toEqual({ value: -0.5 });
    expect(parseAnswer("\u22122")).toEqual({ value: -2 }); // the minus sign of the formulas
    expect(parseAnswer("1e-3")).toEqual({ value: 0.001 });
    expect(parseAnswer("1/4")).toEqual({ value: 0.25 });
    expect(parseAnswer("1 2 3")).toEqual({ value: [1, 2, 3] });
    expect(parseAnswer("[1, 2, 3]")).toEqual({ value: [1, 2, 3] });
    expect(parseAnswer("[7]")).toEqual({ value: [7] });
    expect(parseAnswer("[1, 2; 3, 4]")).toEqual({ value: [[1, 2], [3, 4]] });
    expect(parseAnswer("1 2\n3 4")).toEqual({ value: [[1, 2], [3, 4]] });
    expect(parseAnswer("[[1, 2], [3, 4]]")).toEqual({ value: [[1, 2], [3, 4]] });
    expect(parseAnswer("tensor([0.5, 1.])")).toEqual({ value: [0.5, 1] });
  });

  it("says what is wrong with text that is not an answer", () => {
    expect(parseAnswer("").error).toMatch(/Type a number/);
    expect(parseAnswer("four").error).toBe('"four" is not a number.');
    expect(parseAnswer("[1, 2").error).toBe("A [ is not closed.");
    expect(parseAnswer("1 2; 3").error).toBe("Row 2 has 1 numbers, row 1 has 2: every row needs as many.");
    expect(parseAnswer("[[1, 2], [3, 4]").error).toBe("A [ is not closed.");
  });
});

describe("checking an answer", () => {
  it("accepts what is within atol + rtol·|recorded| and nothing else", () => {
    expect(TOLERANCE).toEqual({ rtol: 1e-3, atol: 1e-4 });
    // 1000 ± (1e-4 + 1): 1000.9 is right, 1001.2 is not
    expect(checkAnswer(1000.9, 1000).right).toBe(true);
    expect(checkAnswer(1001.2, 1000).right).toBe(false);
    // near 0 only atol counts: 5e-5 is right, 2e-4 is not
    expect(checkAnswer(5e-5, 0).right).toBe(true);
    expect(checkAnswer(2e-4, 0).right).toBe(false);
    expect(checkAnswer(0.3333, 1 / 3).right).toBe(true);
    expect(checkAnswer(NaN, "NaN").right).toBe(true);
  });

  it("compares arrays element by element, sizes of 1 aside", () => {
    expect(checkAnswer([1, 2, 3], [[1, 2, 3]]).right).toBe(true);
    expect(checkAnswer([[1, 2], [3, 4]], [[1, 2], [3, 4.5]])).toEqual({ right: false, message: "1 of 4 numbers are not right (the first is number 4)" });
    expect(checkAnswer([1, 2, 3], [[1, 2], [3, 4]])).toEqual({ right: false, message: "the gradient is 2×2 (4 numbers); you typed 3 (3 numbers)" });
    expect(checkAnswer(4, [1, 2]).message).toBe("the gradient is 2 (2 numbers); you typed one number");
  });
});

describe("the chain rule in words", () => {
  const index = indexTrace(traceWithFormulas());

  it("says what each step got, each local derivative with its value, and what it sent where", () => {
    // de/dc = d = 4, de/dd = c = a + b = 5, by hand
    expect(chainWords(index, 0)).toBe("MulBackward0 got dL/de = 1; de/dc = d = 4, so it sent 4 to AddBackward0 (c = a + b); de/dd = c = 5, so it sent 5 to d");
    expect(chainWords(index, 1)).toBe("AccumulateGrad got dL/dd = 5 and added it to d.grad (d.grad is now 5)");
    expect(chainWords(index, 2)).toBe("AddBackward0 got dL/dc = 4; dc/da = 1, so it sent 4 to a; dc/db = 1, so it sent 4 to b");
  });

  it("puts the numbers into a formula, and evaluates elementwise arithmetic", () => {
    const node = index.nodes.get("n3");
    const [toC] = localGradients(index, node);
    expect(pluggedIn(toC, { other: 4, self: 5 }, 1)).toBe("∂L/∂c = 4 · 1");
    expect(pluggedIn(toC, { other: -2 }, 3)).toBe("∂L/∂c = (-2) · 3");
    expect(evaluate(["sub", ["n", "1"], ["pow", ["v", "y"], ["n", "2"]]], { y: [0.5, -1] })).toEqual([0.75, 0]);
    expect(evaluate(["mm", ["v", "x"], ["g"]], { x: 1 }, 1)).toBeNull();
    expect(valueText([[1, 2.5], [3, -4]])).toBe("[1, 2.5; 3, -4]");
  });
});

describe("practice answers", () => {
  it("asks each edge with a small gradient, and opens the timeline one answered step at a time", () => {
    const trace = traceWithFormulas();
    const index = indexTrace(trace);
    const seen = [];
    const practice = createPractice(trace, index, { onResults: (r) => seen.push(r) });
    expect(questionsOf(index).map((q) => q.edges.filter((e) => e.asked).length)).toEqual([2, 0, 2, 0, 0]);
    expect(practice.reachable()).toBe(1);
    // nothing is visible before it is answered: grads sent, .grad, accumulations
    expect(practice.masked.steps[0].grads_out).toEqual([HIDDEN, HIDDEN]);
    expect(practice.masked.tensors.find((t) => t.name === "d").grad).toBe(HIDDEN);
    expect(practice.masked.accumulations[0].total).toBe(HIDDEN);
    expect(practice.answer(0, 0, "four")).toEqual({ error: '"four" is not a number.' });
    expect(practice.answer(0, 0, "4").right).toBe(true);
    expect(practice.masked.steps[0].grads_out).toEqual([4, HIDDEN]);
    expect(practice.answer(0, 1, "20").right).toBe(false);
    // step 1 answered: the timeline may go to step 3 (AddBackward0), d's grad is out
    expect(practice.reachable()).toBe(3);
    expect(practice.masked.tensors.find((t) => t.name === "d").grad).toBe(5);
    expect(practice.masked.tensors.find((t) => t.name === "a").grad).toBe(HIDDEN);
    expect(practice.masked.steps[2].grads_in).toEqual([4]);
    practice.showMe(2, 0);
    expect(practice.answer(2, 1, "4").right).toBe(true);
    expect(practice.reachable()).toBe(5);
    expect(practice.masked.tensors.find((t) => t.name === "a").grad).toBe(4);
    expect(practice.score()).toMatchObject({ right: 2, asked: 4, total: 4 });
    expect(seen.at(-1)).toEqual([
      { step: 1, node: "MulBackward0", node_id: "n3", edge: 0, target: "AddBackward0", input: "c", answer: "4", expected: 4, right: true },
      { step: 1, node: "MulBackward0", node_id: "n3", edge: 1, target: "AccumulateGrad (d)", input: "d", answer: "20", expected: 5, right: false },
      { step: 3, node: "AddBackward0", node_id: "n0", edge: 0, target: "AccumulateGrad (a)", input: "a", answer: null, expected: 4, right: false },
      { step: 3, node: "AddBackward0", node_id: "n0", edge: 1, target: "AccumulateGrad (b)", input: "b", answer: "4", expected: 4, right: true },
    ]);
    // the same answers restore the same state (another view of the widget, a saved page)
    const again = createPractice(trace, index, { results: seen.at(-1) });
    expect(again.reachable()).toBe(5);
    expect(again.score()).toMatchObject({ right: 2, asked: 4 });
  });
});

describe("what is not asked", () => {
  it("shows a gradient of more than 16 numbers, and skips an edge that got none", () => {
    const trace = traceWithFormulas();
    const big = { shape: [17], dtype: "float32", stats: { min: 5, max: 5, mean: 5, std: 0 }, preview: [5, 5, 5, 5, 5, 5] };
    trace.steps[0].grads_out = [4.0, big];
    trace.steps[2].grads_out = [4.0, null];
    const index = indexTrace(trace);
    const questions = questionsOf(index);
    expect(questions[0].edges.map((e) => e.asked)).toEqual([true, false]);
    expect(questions[2].edges.map((e) => e.asked)).toEqual([true, false]);
    const practice = createPractice(trace, index);
    expect(practice.answer(0, 1, "5")).toEqual({ error: "Nothing is asked on this edge." });
    practice.answer(0, 0, "4");
    expect(practice.masked.steps[0].grads_out[1]).toEqual(big); // revealed once the step is reached
    expect(practice.reachable()).toBe(3);
    practice.answer(2, 0, "4");
    expect(practice.reachable()).toBe(5);
    expect(practice.score()).toMatchObject({ right: 2, asked: 2, total: 2 });
  });
});

/** A stand-in for the anywidget model (as in widget.test.js). */
function fakeModel(state) {
  const listeners = {};
  return {
    saves: 0,
    get: (key) => state[key],
    set(key, value) {
      state[key] = value;
      for (const fn of listeners[`change:${key}`] || []) fn();
    },
    save_changes() {
      this.saves += 1;
    },
    on: (name, fn) => (listeners[name] ||= []).push(fn),
    off: (name, fn) => (listeners[name] = (listeners[name] || []).filter((f) => f !== fn)),
    send: () => {},
  };
}

describe("practice mode in the widget", () => {
  it("hides every gradient, checks typed answers, and sends the results to the model", async () => {
    const model = fakeModel({ trace: JSON.stringify(traceWithFormulas()), selected: "", step: 0, view: "backward", practice: true, practice_results: [] });
    const el = document.createElement("div");
    document.body.append(el);
    const cleanup = await widget.render({ model, el });
    const panel = () => el.querySelector('[data-role="practice"]');
    expect(panel().querySelector('[data-role="tolerance"]').textContent).toContain("rtol 0.001, atol 0.0001");
    // the timeline cannot pass the first step before it is answered
    el.querySelector('[data-role="last"]').click();
    expect(model.get("step")).toBe(1);
    expect(el.querySelector('[data-role="inspector"] [data-step="1"]').textContent).toContain(HIDDEN);
    expect(el.querySelector('[data-role="inspector"] [data-step="1"]').textContent).not.toMatch(/\b5\./);
    // the local derivatives (de/dc = d = 4) are the learner's to work out too
    expect(el.querySelector('[data-role="inspector"] .formula-local').textContent).toBe("local derivative de/dc = d");
    const field = (k) => panel().querySelector(`[data-edge="${k}"] input`);
    field(0).value = "4";
    panel().querySelector('[data-edge="0"] [data-role="check"]').click();
    expect(panel().querySelector('[data-edge="0"] [data-role="verdict"]').textContent).toBe("✓ right: the recorded value is 4");
    expect(panel().querySelector('[data-role="chain-words"]')).toBeNull(); // not before the step is answered
    field(1).value = "9";
    field(1).dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
    expect(panel().querySelector('[data-edge="1"] [data-role="verdict"]').textContent).toBe("✗ not right: the recorded value is 5");
    expect(panel().querySelector('[data-edge="1"] [data-role="working"]').textContent).toBe("∂L/∂d = 5 · 1 = 5");
    expect(panel().querySelector('[data-role="chain-words"]').textContent).toContain("de/dd = c = 5, so it sent 5 to d");
    expect(panel().querySelector('[data-role="score"]').textContent).toBe("score 1 / 2 (2 to go)");
    expect(panel().querySelector('[data-role="wrong-list"]').textContent).toBe("got wrong: step 1 → d");
    expect(model.get("practice_results").map((r) => [r.step, r.input, r.answer, r.right])).toEqual([
      [1, "c", "4", true],
      [1, "d", "9", false],
    ]);
    expect(model.saves).toBeGreaterThan(0);
    // practice mode turned off from Python: the gradients show, the words stay under the timeline
    model.set("practice", false);
    expect(el.querySelector('[data-role="practice"]')).toBeNull();
    model.set("step", 1);
    expect(el.querySelector('[data-role="step-words"] [data-role="chain-words"]').textContent).toMatch(/^MulBackward0 got dL\/de = 1;/);
    expect(el.querySelector('[data-role="inspector"] [data-step="1"]').textContent).not.toContain(HIDDEN);
    // and on again: the answers given so far come back
    model.set("practice", true);
    expect(el.querySelector('[data-role="practice"] [data-role="score"]').textContent).toBe("score 1 / 2 (2 to go)");
    cleanup();
    el.remove();
  });

  it("says the chain rule of each step under the timeline when not practising", () => {
    const el = document.createElement("div");
    const app = createApp(el, { trace: traceWithFormulas() });
    expect(el.querySelector('[data-role="step-words"]').hidden).toBe(true);
    app.setStep(3);
    expect(el.querySelector('[data-role="chain-words"]').textContent).toBe("AddBackward0 got dL/dc = 4; dc/da = 1, so it sent 4 to a; dc/db = 1, so it sent 4 to b");
    app.destroy();
  });
});
