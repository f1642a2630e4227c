import { describe, expect, it } from "vitest";
import { checkResultView, checkSection, elementLabels, jacobianSection, nodeChecker, rowTimesMatrix } from "../src/nodecheck.js";
import { indexTrace } from "../src/trace.js";
import widget from "../src/widget.js";

// softmax of x = [0, ln 2, ln 3] is y = [1/6, 2/6, 3/6]; its Jacobian diag(y) - y y^T by hand:
const Y = [1 / 6, 2 / 6, 3 / 6];
const J = Y.map((yi, i) => Y.map((yj, j) => (i === j ? yi : 0) - yi * yj));

/** y = softmax(x); loss = (y * w).sum() with w = [1, -2, 3], as the recorders write it. */
function softmaxTrace() {
  return {
    version: 2,
    source: { kind: "cell", lines: { 3: "y = torch.softmax(x, dim=0)" } },
    status: { complete: true, truncated: null, error: null },
    tensors: [
      { id: "t0", name: "x", role: "leaf", shape: [3], dtype: "float32", requires_grad: true, value: [0, 0.6931, 1.0986] },
      { id: "t1", name: "y", role: "intermediate", shape: [3], dtype: "float32", requires_grad: true, value: Y, grad_fn: "n0", op: "o0" },
    ],
    ops: [{ id: "o0", op: "softmax", inputs: ["t0"], outputs: ["t1"], node: "n0", line: 3 }],
    nodes: [
      { id: "n0", name: "SoftmaxBackward0", op: "o0", next: [["n1", 0]], saved: {}, jacobian: { of: ["t1"], wrt: ["t0"], blocks: [[J]] } },
      { id: "n1", name: "AccumulateGrad", next: [], saved: {}, variable: "t0" },
    ],
    passes: [{ index: 0, kind: "backward", roots: [["n0", 0]] }],
    steps: [
      { pass: 0, node: "n0", grads_in: [[1, -2, 3]], grads_out: [[0, 0, 0]] },
      { pass: 0, node: "n1", grads_in: [[0, 0, 0]], grads_out: [] },
    ],
    accumulations: [],
  };
}

function fakeModel(state, { sendThrows = false } = {}) {
  const listeners = {};
  const sent = [];
  return {
    sent,
    get: (key) => state[key],
    set: (key, value) => {
      state[key] = value;
      for (const fn of listeners[`change:${key}`] || []) fn();
    },
    save_changes: () => {},
    on: (name, fn) => (listeners[name] ||= []).push(fn),
    off: (name, fn) => (listeners[name] = (listeners[name] || []).filter((f) => f !== fn)),
    send: (message) => {
      if (sendThrows) throw new Error("no comm");
      sent.push(message);
    },
    emit: (name, message) => (listeners[name] || []).forEach((fn) => fn(message)),
  };
}

const RESULT = {
  node: "DiagonalSoftmaxBackward",
  ok: false,
  verdict: "DiagonalSoftmaxBackward's backward is WRONG: the gradient of input x is off",
  note: null,
  max_abs_error: 0.5,
  max_rel_error: 2.0,
  atol: 1e-5,
  rtol: 1e-3,
  inputs: [{ name: "x", shape: [3], analytic: [0.25, -0.5, 0.75], numeric: [-0.25, -0.3, 0.5], max_abs_error: 0.5, max_rel_error: 2.0, ok: false }],
};

describe("the local Jacobian", () => {
  it("labels elements with the program's names, in C order", () => {
    expect(elementLabels("x", [3])).toEqual(["x[0]", "x[1]", "x[2]"]);
    expect(elementLabels("W", [2, 2])).toEqual(["W[0,0]", "W[0,1]", "W[1,0]", "W[1,1]"]);
    expect(elementLabels("s", [])).toEqual(["s"]);
  });

  it("multiplies a row by the matrix as backward does", () => {
    expect(rowTimesMatrix([1, 2], [[1, 0, 3], [0, 1, -1]])).toEqual([1, 2, 1]);
  });

  it("shows softmax's full matrix with its off-diagonal -y_i y_j terms and the identity with the numbers", () => {
    const index = indexTrace(softmaxTrace());
    const section = jacobianSection({ index }, index.nodes.get("n0"));
    const table = section.querySelector('[data-role="jacobian-matrix"]');
    expect([...table.querySelectorAll("thead th")].map((th) => th.textContent)).toEqual(["∂ row / ∂ column", "x[0]", "x[1]", "x[2]"]);
    expect([...table.querySelectorAll("tbody th")].map((th) => th.textContent)).toEqual(["y[0]", "y[1]", "y[2]"]);
    const cells = [...table.querySelectorAll("tbody tr")].map((tr) => [...tr.querySelectorAll("td")].map((td) => Number(td.textContent)));
    expect(cells[0][0]).toBeCloseTo(5 / 36, 4); // y0 (1 - y0)
    expect(cells[0][1]).toBeCloseTo(-2 / 36, 4); // -y0 y1
    expect(cells[1][2]).toBeCloseTo(-6 / 36, 4); // -y1 y2
    expect(table.querySelectorAll("td.diagonal")).toHaveLength(3);
    const identity = section.querySelector('[data-role="jacobian-identity"]').textContent;
    expect(identity).toContain("grad sent to x = grad in (a row) × J");
    // grad in (a row) @ J, summed here from the hand Jacobian
    const sent = [0, 1, 2].map((c) => [1, -2, 3].reduce((acc, g, r) => acc + g * J[r][c], 0));
    const shown = identity.split("grad sent to x = ")[2].match(/-?\d+(\.\d*)?(e-?\d+)?/g).map(Number);
    shown.forEach((x, c) => expect(x).toBeCloseTo(sent[c], 3));
  });

  it("is absent for a node the trace carries no Jacobian for", () => {
    const trace = softmaxTrace();
    delete trace.nodes[0].jacobian;
    const index = indexTrace(trace);
    expect(jacobianSection({ index }, index.nodes.get("n0"))).toBe(null);
  });
});

describe("check this node", () => {
  it("shows analytic and numeric side by side, the largest error and the verdict", () => {
    const view = checkResultView(RESULT);
    expect(view.querySelector('[data-role="check-verdict"]').textContent).toContain("WRONG: the gradient of input x");
    const input = view.querySelector('[data-input="x"]');
    const texts = (selector) => [...input.querySelectorAll(selector)].map((cell) => cell.textContent);
    expect(texts("thead th")).toEqual(["", "x[0]", "x[1]", "x[2]"]);
    expect(texts("tr.analytic td")).toEqual(["0.25", "-0.5", "0.75"]);
    expect(texts("tr.numeric td")).toEqual(["-0.25", "-0.3", "0.5"]);
    expect(input.querySelector(".mark").textContent).toBe("✗ wrong");
    expect(input.textContent).toContain("gradient sent to x: largest error 0.5");
    expect(view.textContent).toContain("largest error: 0.5 absolute, 2. relative");
  });

  it("sends a request, resolves with the kernel's result, and ignores other requests' answers", async () => {
    const model = fakeModel({});
    const { checkNode, stop } = nodeChecker(model, 1000);
    const pending = checkNode("n4");
    expect(model.sent).toEqual([{ type: "check", node: "n4", request: 1 }]);
    model.emit("msg:custom", { type: "check", request: 99, ok: true, result: {} });
    model.emit("msg:custom", { type: "buffer", request: 1, ok: true });
    model.emit("msg:custom", { type: "check", request: 1, ok: true, result: RESULT });
    await expect(pending).resolves.toBe(RESULT);
    const refused = checkNode("n1");
    model.emit("msg:custom", { type: "check", request: 2, ok: false, error: "AccumulateGrad only adds" });
    await expect(refused).rejects.toThrow("AccumulateGrad only adds");
    stop();
  });

  it("says it needs the running kernel when no answer comes in time or the kernel cannot be reached", async () => {
    const silent = nodeChecker(fakeModel({}), 20);
    await expect(silent.checkNode("n0")).rejects.toThrow("needs the running kernel");
    silent.stop();
    const unreachable = nodeChecker(fakeModel({}, { sendThrows: true }), 1000);
    await expect(unreachable.checkNode("n0")).rejects.toThrow("needs the running kernel, which cannot be reached (no comm)");
    unreachable.stop();
  });

  it("the inspector's button shows the result or the reason, and is absent for AccumulateGrad", async () => {
    const index = indexTrace(softmaxTrace());
    let answer = Promise.resolve(RESULT);
    const ctx = { index, checkNode: () => answer };
    const section = checkSection(ctx, index.nodes.get("n0"));
    section.querySelector('[data-role="check-node"]').click();
    await answer;
    await new Promise((r) => setTimeout(r, 0));
    expect(section.querySelector('[data-role="check-verdict"]').textContent).toContain("WRONG");
    answer = Promise.reject(new Error("checking a node needs the running kernel: this is a saved page"));
    section.querySelector('[data-role="check-node"]').click();
    await answer.catch(() => {});
    await new Promise((r) => setTimeout(r, 0));
    expect(section.querySelector('[data-role="check-error"]').textContent).toContain("needs the running kernel");
    expect(checkSection(ctx, index.nodes.get("n1"))).toBe(null);
  });

  it("goes through the widget's model: a click sends { type: check } and the reply is drawn", async () => {
    const model = fakeModel({ trace: JSON.stringify(softmaxTrace()), selected: "n0", step: 0, view: "backward" });
    const el = document.createElement("div");
    const cleanup = await widget.render({ model, el });
    el.querySelector('[data-role="inspector"] [data-role="check-node"]').click();
    expect(model.sent.at(-1)).toEqual({ type: "check", node: "n0", request: 1 });
    model.emit("msg:custom", { type: "check", request: 1, ok: true, result: RESULT });
    await new Promise((r) => setTimeout(r, 0));
    expect(el.querySelector('[data-role="check-verdict"]').textContent).toContain("the gradient of input x is off");
    cleanup();
  });
});

describe("the Jacobian of long names and of shape changes", () => {
  it("says a long name once in the title and labels the axes with indexes; no diagonal when shapes differ", () => {
    const trace = softmaxTrace();
    trace.tensors[0].name = "model.fc1.weight";
    trace.tensors[0].shape = [1, 3];
    const index = indexTrace(trace);
    const section = jacobianSection({ index }, index.nodes.get("n0"));
    const table = section.querySelector('[data-role="jacobian-matrix"]');
    expect([...table.querySelectorAll("thead th")].map((th) => th.textContent)).toEqual(["∂ row / ∂ column", "[0,0]", "[0,1]", "[0,2]"]);
    expect([...table.querySelectorAll("tbody th")].map((th) => th.textContent)).toEqual(["y[0]", "y[1]", "y[2]"]);
    expect(section.querySelector(".jacobian-title").textContent).toContain("columns model.fc1.weight[0,0]…model.fc1.weight[0,2]");
    expect(table.querySelectorAll("td.diagonal")).toHaveLength(0);
  });
});

describe("in practice mode", () => {
  it("shows the Jacobian and the rule, not what the node sent, and no check button", () => {
    const index = indexTrace(softmaxTrace());
    const ctx = { index, practice: true, checkNode: () => Promise.resolve(RESULT) };
    const section = jacobianSection(ctx, index.nodes.get("n0"));
    expect(section.querySelector('[data-role="jacobian-matrix"]')).not.toBe(null);
    const identity = section.querySelector('[data-role="jacobian-identity"]').textContent;
    expect(identity).toBe("grad sent to x = grad in (a row) × J");
    expect(checkSection(ctx, index.nodes.get("n0"))).toBe(null);
  });
});
