import { describe, expect, it, vi } from "vitest";
import { localFactor, localGradients, substitute } from "../src/formula.js";
import { renderInspector } from "../src/inspector.js";
import { indexTrace } from "../src/trace.js";
import { cellColour, renderValue } from "../src/values.js";
import { simpleTrace } from "./fixtures.js";

function inspect(trace, id, extra = {}) {
  const panel = document.createElement("aside");
  panel.setAttribute("data-role", "inspector");
  const selected = [];
  const ctx = { index: indexTrace(trace), step: 0, select: (x) => selected.push(x), goToStep: () => {}, expand: () => {}, ...extra };
  renderInspector(panel, ctx, id);
  return { panel, selected };
}

describe("formulas", () => {
  it("reads a product formula as a local derivative", () => {
    expect(localFactor("grad * other")).toBe("other");
    expect(localFactor("grad")).toBe("1");
    expect(localFactor("-grad")).toBe("-1");
    expect(localFactor("grad / other")).toBe("1 / other");
    expect(localFactor("-grad * sin(self)")).toBe("-sin(self)");
    expect(localFactor("expand(grad, self_sym_sizes)")).toBeNull();
  });

  it("puts the program's names in", () => {
    expect(substitute("grad * other + self_x", { other: "d", grad: "g" })).toBe("g * d + self_x");
    const index = indexTrace(simpleTrace());
    const [dc, dd] = localGradients(index, index.nodes.get("n3"));
    expect(dc).toMatchObject({ text: "de/dc = d", kind: "local", value: 4 });
    expect(dd).toMatchObject({ text: "de/dd = c", kind: "local", value: 5 });
    const [da] = localGradients(index, index.nodes.get("n0"));
    expect(da.text).toBe("dc/da = 1");
  });

  it("shows other formulas as the vector-Jacobian product", () => {
    const trace = simpleTrace();
    trace.formulas.sum = { node: "SumBackward0", inputs: ["self"], saves: ["self_sym_sizes"], grads: { self: "expand(grad, self_sym_sizes)" } };
    trace.ops.push({ id: "o2", op: "sum", inputs: ["t4"], outputs: ["t5"], node: "n5" });
    trace.tensors.push({ id: "t5", name: "loss", role: "output", shape: [], dtype: "float32", value: 20 });
    trace.nodes.push({ id: "n5", name: "SumBackward0", op: "o2", formula: "sum", next: [["n3", 0]], saved: { self_sym_sizes: { value: [] } } });
    const index = indexTrace(trace);
    expect(localGradients(index, index.nodes.get("n5"))[0].text).toBe("∂L/∂e = expand(∂L/∂loss, [])");
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

  it("says so when the recording kept statistics only", () => {
    const summary = { shape: [300], dtype: "float32", stats: { min: 0, max: 1, mean: 0.5, std: 0.1 }, preview: [0, 1] };
    const el = renderValue(summary, "float32", {});
    expect(el.querySelector("button")).toBeNull();
    expect(el.textContent).toContain("--full");
  });
});

describe("the inspector", () => {
  it("shows a Function node's saved buffers, formulas and gradients", () => {
    const { panel } = inspect(simpleTrace(), "n3");
    expect(panel.querySelector(".title").textContent).toBe("MulBackward0");
    const saved = panel.querySelector('[data-role="saved"]');
    expect(saved.querySelector('[data-saved="self"]').textContent).toContain("_saved_self");
    expect(saved.querySelector('[data-saved="self"]').textContent).toContain("c = 5.");
    expect(saved.querySelector('[data-saved="other"]').textContent).toContain("d = 4.");
    expect(saved.textContent).toContain("freed after step 1");
    expect(panel.querySelector('[data-role="formulas"]').textContent).toContain("de/dc = d = 4.");
    const step = panel.querySelector(".step");
    expect(step.textContent).toContain("grad in1.");
    expect(step.querySelector(".sent").textContent).toContain("4. → AddBackward0");
    expect(step.querySelector(".sent").textContent).toContain("5. → AccumulateGrad (d)");
    expect(panel.textContent).toContain("line 8");
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
