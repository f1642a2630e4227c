import { describe, expect, it, vi } from "vitest";
import { localDerivative, localFactor, localGradients, pieceOf, toMathML, toText } from "../src/formula.js";
import { renderInspector } from "../src/inspector.js";
import { indexTrace } from "../src/trace.js";
import { cellColour, pythonLiteral, renderSavedValue, renderValue, statsOf } from "../src/values.js";
import { simpleTrace } from "./fixtures.js";

function inspect(trace, id, extra = {}) {
  const panel = document.createElement("aside");
  panel.setAttribute("data-role", "inspector");
  const selected = [];
  const ctx = { index: indexTrace(trace), step: 0, select: (x) => selected.push(x), goToStep: () => {}, expand: () => {}, ...extra };
  renderInspector(panel, ctx, id);
  return { panel, selected };
}

/** The fixture with the readable table the kernel writes (nbgrad/trace/readable.py). */
describe("formulas", () => {
  it("reads a product formula as a local derivative", () => {
    expect(localFactor(["g"])).toEqual(["n", "1"]);
    expect(localFactor(["neg", ["g"]])).toEqual(["n", "-1"]);
    expect(localFactor(["mul", ["v", "other"], ["g"]])).toEqual(["v", "other"]);
    expect(localFactor(["div", ["g"], ["v", "other"]])).toEqual(["div", ["n", "1"], ["v", "other"]]);
    expect(localFactor(["mm", ["g"], ["T", ["v", "mat2"]]])).toBeNull();
    expect(localFactor(["say", ["g"], " summed to shape ", ["tuple", "(3,)"]])).toBeNull();
  });

  it("puts the program's names in, the incoming gradient last", () => {
    const index = indexTrace(simpleTrace());
    const [dc, dd] = localGradients(index, index.nodes.get("n3"));
    expect(dc.text).toBe("∂L/∂c = d · ∂L/∂e");
    expect(dd.text).toBe("∂L/∂d = c · ∂L/∂e");
    expect(localDerivative(index, index.nodes.get("n3"), dc)).toEqual({ text: "de/dc = d", value: 4 });
    const [da, db] = localGradients(index, index.nodes.get("n0"));
    expect(da.text).toBe("∂L/∂a = ∂L/∂c");
    expect(localDerivative(index, index.nodes.get("n0"), db)).toEqual({ text: "dc/db = 1", value: null });
  });

  it("writes every kind of tree as text and as MathML", () => {
    const names = { self: "model(x) - target", mat2: "W" };
    const pow = ["mul", ["n", "2"], ["v", "self"], ["g"]];
    expect(toText(pow, names, "loss")).toBe("2 · (model(x) - target) · ∂L/∂loss");
    const relu = ["cases", [["g"], ["cmp", ">", ["v", "result"], ["n", "0"]]], [["n", "0"], null]];
    expect(toText(relu, { result: "h" }, "h")).toBe("{ ∂L/∂h when h > 0; 0 otherwise }");
    expect(toText(["mm", ["g"], ["T", ["v", "mat2"]]], names, "y")).toBe("∂L/∂y Wᵀ");
    expect(toText(["neg", ["mul", ["v", "a"], ["g"]]])).toBe("−a · ∂L/∂out");
    expect(toText(["div", ["add", ["v", "a"], ["n", "1"]], ["v", "b"]])).toBe("(a + 1) / b");
    expect(toText(["say", ["g"], " summed to shape ", ["tuple", "(3,)"]])).toBe("∂L/∂out summed to shape (3,)");
    const math = toMathML(["lhs", "model(x) - target"], pow, names, "loss");
    expect(math.querySelector("math").namespaceURI).toBe("http://www.w3.org/1998/Math/MathML");
    expect(math.querySelectorAll("math")).toHaveLength(4); // ∂L/∂(…) =, 2 ·, (…) ·, ∂L/∂loss: it wraps between them
    expect(math.querySelectorAll("mfrac")).toHaveLength(2); // ∂L/∂(...) on both sides
    expect(math.querySelector("mn").textContent).toBe("2");
    expect(math.textContent).toContain("model(x) - target");
    const t = toMathML(["lhs", "x"], ["mm", ["g"], ["T", ["v", "mat2"]]], names, "y");
    expect(t.querySelector("msup").textContent).toBe("WT");
    const cases = toMathML(["lhs", "x"], relu, { result: "h" }, "h");
    expect(cases.querySelectorAll("mtr")).toHaveLength(2);
    expect(cases.textContent).toContain("otherwise");
  });

  it("gives each input of cat or stack its own piece of the gradient", () => {
    expect(toText(pieceOf(["pieces", ["g"], 0, [3, 2]], 0), {}, "y")).toBe("(∂L/∂y)[0:3]");
    expect(toText(pieceOf(["pieces", ["g"], 0, [3, 2]], 1), {}, "y")).toBe("(∂L/∂y)[3:5]");
    expect(toText(pieceOf(["pieces", ["g"], 1, null, 2], 1), {}, "y")).toBe("(∂L/∂y)[:, 1]");
    expect(toText(pieceOf(["pieces", ["g"], 0, "inputs"], 1, [2, 3]), {}, "y")).toBe("(∂L/∂y)[2:5]");
    expect(toText(pieceOf(["pieces", ["g"], 0, "inputs"], 1, null), {}, "y")).toBe("∂L/∂y cut along dim 0, piece 1");
  });

  it("says in words what runs when a trace has no readable table", () => {
    const trace = simpleTrace();
    delete trace.readable;
    for (const node of trace.nodes) delete node.readable;
    const index = indexTrace(trace);
    expect(localGradients(index, index.nodes.get("n3"))[0].text).toBe("∂L/∂c = computed by MulBackward0");
  });
});

describe("values", () => {
  it("draws a number, a vector and a matrix with a colour scale", () => {
    expect(renderValue(4, "float32").textContent).toBe("4.");
    const vector = renderValue([1, -2.5], "float32");
    expect(vector.querySelectorAll("td")).toHaveLength(2);
    const matrix = renderValue([[1, -2], [3, 4]], "float32");
    expect(matrix.querySelectorAll("tr")).toHaveLength(2);
    expect(matrix.querySelector("td").getAttribute("style")).toContain("rgba(214, 69, 65");
    expect(cellColour(-1, 1)).toContain("52, 120, 198");
    expect(renderValue("NaN", "float32").textContent).toBe("nan");
  });

  it("shows a large array's statistics and fetches the whole array on request", async () => {
    const summary = { shape: [30, 30], dtype: "float32", stats: { min: -1, max: 1, mean: 0, std: 0.5 }, preview: [[1, 2], [3, 4]], buffer: "b0" };
    const fetchBuffer = vi.fn(() => Promise.resolve({ ok: true, shape: [2, 2], dtype: "float32", data: [[1, 2], [3, 4]] }));
    const el = renderValue(summary, "float32", { fetchBuffer });
    expect(el.textContent).toContain("mean");
    el.querySelector("button.load-full").click();
    expect(fetchBuffer).toHaveBeenCalledWith("b0");
    await Promise.resolve();
    await Promise.resolve();
    expect(el.querySelector(".load-status").textContent).toContain("2×2 float32, 4 values");
  });

  it("shows a failed fetch as an error, not a spinner", async () => {
    const summary = { shape: [300], dtype: "float32", stats: { min: 0, max: 1, mean: 0.5, std: 0.1 }, preview: [0, 1], buffer: "b1" };
    const el = renderValue(summary, "float32", { fetchBuffer: () => Promise.reject(new Error("kernel gone")) });
    el.querySelector("button.load-full").click();
    await new Promise((r) => setTimeout(r, 0));
    const status = el.querySelector(".load-status");
    expect(status.className).toContain("error");
    expect(status.textContent).toContain("kernel gone");
    expect(el.querySelector("button.load-full").disabled).toBe(false);
  });

  it("shows a first row as the preview when the whole array is a fetch away", () => {
    const summary = { shape: [30, 30], dtype: "float32", stats: { min: -1, max: 1, mean: 0, std: 0.5 }, preview: [1, 2, 3], buffer: "b0" };
    const el = renderValue(summary, "float32", { fetchBuffer: () => new Promise(() => {}) });
    expect(el.querySelector(".preview-title").textContent).toBe("preview (first row)");
    expect(el.querySelectorAll(".matrix td")).toHaveLength(3);
  });

  it("decodes a saved page's array when shown, with statistics computed from it", async () => {
    // save_html's form: shape, dtype and the buffer whose bytes ride along, no statistics
    const summary = { shape: [2, 2], dtype: "float32", buffer: "b3" };
    const fetchBuffer = vi.fn(() => Promise.resolve({ ok: true, shape: [2, 2], dtype: "float32", data: [[1, 2], [3, "NaN"]] }));
    const el = renderValue(summary, "float32", { fetchBuffer });
    expect(fetchBuffer).toHaveBeenCalledWith("b3");
    await new Promise((r) => setTimeout(r, 0));
    const stats = [...el.querySelectorAll(".stats tr")].map((tr) => tr.textContent);
    expect(stats).toEqual(["min1.", "max3.", "mean2.", "std0.8165", "nan/inf1"]);
    expect(el.querySelectorAll(".matrix td")).toHaveLength(4);
    expect(statsOf([1, 2, 3, 4])).toMatchObject({ min: 1, max: 4, mean: 2.5 });
  });

  it("says so when the recording kept statistics only", () => {
    const summary = { shape: [300], dtype: "float32", stats: { min: 0, max: 1, mean: 0.5, std: 0.1 }, preview: [0, 1] };
    const el = renderValue(summary, "float32", {});
    expect(el.querySelector("button")).toBeNull();
    expect(el.textContent).toContain("--full");
  });
});

describe("the inspector", () => {
  it("shows a Function node's saved buffers, formulas and gradients", () => {
    const trace = simpleTrace();
    const { panel } = inspect(trace, "n3");
    expect(panel.querySelector(".title").textContent).toBe("MulBackward0");
    const saved = panel.querySelector('[data-role="saved"]');
    expect(saved.querySelector('[data-saved="self"]').textContent).toContain("_saved_self");
    expect(saved.querySelector('[data-saved="self"]').textContent).toContain("c = 5.");
    expect(saved.querySelector('[data-saved="other"]').textContent).toContain("d = 4.");
    expect(saved.textContent).toContain("freed after step 1");
    const formulas = panel.querySelector('[data-role="formulas"]');
    expect(formulas.textContent).toContain("de/dc = d = 4.");
    expect(formulas.querySelector(".formula-plain").textContent).toBe("∂L/∂c = d · ∂L/∂e");
    expect(formulas.querySelector(".formula-pieces").getAttribute("aria-hidden")).toBe("true");
    const step = panel.querySelector(".step");
    expect(step.textContent).toContain("grad in1.");
    expect(step.querySelector(".sent").textContent).toContain("4. → AddBackward0");
    expect(step.querySelector(".sent").textContent).toContain("5. → AccumulateGrad (d)");
    expect(panel.textContent).toContain(`line ${trace.ops.find((op) => op.node === "n3").line}`);
    expect(panel.textContent).toContain("e = c * d");
  });

  it("shows a leaf's accumulations in order with the running total", () => {
    const trace = simpleTrace();
    trace.accumulations.push({ tensor: "t0", pass: 1, step: 9, grad: 4.0, total: 8.0 });
    const { panel } = inspect(trace, "n1");
    const rows = panel.querySelectorAll('[data-role="accumulations"] [data-accumulation]');
    expect(rows).toHaveLength(2);
    expect(rows[0].textContent).toContain("+4.→ .grad =4.");
    expect(rows[1].textContent).toContain(".grad =8.");
    expect(rows[1].textContent).toContain("backward pass 2");
  });

  it("shows a tensor, and its links select what they name", () => {
    const { panel, selected } = inspect(simpleTrace(), "t2");
    expect(panel.querySelector(".title").textContent).toBe("c");
    expect(panel.textContent).toContain("is_leafFalse");
    panel.querySelector('[data-link="n0"]').click();
    expect(selected).toEqual(["n0"]);
  });

  it("renders names from user code as text, never as HTML", () => {
    const trace = simpleTrace();
    const evil = "<img src=x onerror=alert(1)>";
    trace.tensors[0].name = evil;
    trace.nodes[3].name = "<b>Custom</b>";
    let { panel } = inspect(trace, "t0");
    expect(panel.querySelector("img")).toBeNull();
    expect(panel.querySelector(".title").textContent).toBe(evil);
    ({ panel } = inspect(trace, "n3"));
    expect(panel.querySelector("b")).toBeNull();
    expect(panel.querySelector(".title").textContent).toBe("<b>Custom</b>");
  });

  it("names a custom Function's saved tensors as PyTorch does, and says when they were freed", () => {
    const trace = simpleTrace();
    trace.nodes[3] = { ...trace.nodes[3], name: "SquareBackward", formula: undefined, saved: { "tensors[0]": { tensor: "t2" } } };
    let { panel } = inspect(trace, "n3");
    expect(panel.querySelector('[data-role="saved"]').textContent).toContain("saved_tensors[0]c = 5.");
    trace.nodes[3] = { ...trace.nodes[3], saved: {}, freed_at: -1 };
    ({ panel } = inspect(trace, "n3"));
    expect(panel.textContent).toContain("Freed: a backward pass without retain_graph=True");
  });

  it("has a hint when nothing is selected", () => {
    const { panel } = inspect(simpleTrace(), null);
    expect(panel.textContent).toContain("Click a node");
  });
});

describe("readable values and the panel (branch readable)", () => {
  it("writes sizes, dims and flags as Python does, not as a float matrix", () => {
    expect(pythonLiteral([5, 3])).toBe("(5, 3)");
    expect(pythonLiteral([7])).toBe("(7,)");
    expect(pythonLiteral([[2, 3], [4, 3]])).toBe("((2, 3), (4, 3))");
    expect(pythonLiteral(15)).toBe("15");
    expect(pythonLiteral(true)).toBe("True");
    expect(pythonLiteral(null)).toBe("None");
    expect(renderSavedValue([5, 3]).textContent).toBe("(5, 3)");
    expect(renderSavedValue([5, 3]).querySelector("td")).toBeNull();
    expect(renderSavedValue([0.5, 1.5]).querySelectorAll("td")).toHaveLength(2); // an array of floats stays an array
    const trace = simpleTrace();
    trace.nodes[3].saved.self_sym_sizes = { value: [5, 3] };
    trace.nodes[3].saved.self_sym_numel = { value: 15 };
    const { panel } = inspect(trace, "n3");
    expect(panel.querySelector('[data-saved="self_sym_sizes"]').textContent).toContain("_saved_self_sym_sizes(5, 3)");
    expect(panel.querySelector('[data-saved="self_sym_numel"]').textContent).toContain("15");
    expect(panel.querySelector('[data-saved="self_sym_numel"]').textContent).not.toContain("15.");
  });

  it("puts a wide matrix in its own scroll box", () => {
    const wide = renderValue([Array.from({ length: 40 }, (_, i) => i / 7)], "float32");
    expect(wide.classList.contains("scroll-x")).toBe(true);
    expect(wide.querySelectorAll("td")).toHaveLength(40);
  });

  it("shows a custom Function's backward source, as text", () => {
    const trace = simpleTrace();
    trace.nodes[3] = { ...trace.nodes[3], name: "SquareBackward", formula: undefined };
    trace.backward_sources = { SquareBackward: { function: "Square", file: "/tmp/x.py", line: 12, text: "@staticmethod\ndef backward(ctx, g):\n    return 2 * g  # <b>" } };
    const { panel } = inspect(trace, "n3");
    const source = panel.querySelector('[data-role="backward-source"]');
    expect(source.querySelectorAll(".source-line")).toHaveLength(3);
    expect(source.textContent).toContain("  13def backward(ctx, g):");
    expect(source.querySelector("b")).toBeNull();
    expect(panel.textContent).toContain("Square.backward, x.py line 12");
  });

  it("adds one resize handle beside the panel, which the arrow keys move", () => {
    const main = document.createElement("div");
    const panel = document.createElement("aside");
    main.append(panel);
    const ctx = { index: indexTrace(simpleTrace()), step: 0, select: () => {}, goToStep: () => {}, expand: () => {} };
    renderInspector(panel, ctx, "n3");
    renderInspector(panel, ctx, "t0");
    const handles = main.querySelectorAll('[data-role="inspector-resize"]');
    expect(handles).toHaveLength(1);
    expect(handles[0].getAttribute("role")).toBe("separator");
    handles[0].dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowLeft", bubbles: true }));
    expect(panel.style.flexBasis).toMatch(/px$/);
  });
});
