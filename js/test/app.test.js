import { describe, expect, it } from "vitest";
import { createApp } from "../src/app.js";
import { layeredTrace, simpleTrace } from "./fixtures.js";

function mount(trace, options = {}) {
  const el = document.createElement("div");
  document.body.append(el);
  const events = [];
  const app = createApp(el, {
    trace,
    onSelect: (id) => events.push(["select", id]),
    onStep: (k) => events.push(["step", k]),
    onView: (v) => events.push(["view", v]),
    ...options,
  });
  return { el, app, events };
}

describe("the widget page", () => {
  it("draws every node with data-node-id and data-label", () => {
    const { el } = mount(simpleTrace());
    const labels = [...el.querySelectorAll("[data-node-id]")].map((n) => n.getAttribute("data-label"));
    expect(labels.sort()).toEqual(["AccumulateGrad", "AccumulateGrad", "AccumulateGrad", "AddBackward0", "MulBackward0"]);
    expect(el.querySelector('[data-role="inspector"]')).not.toBeNull();
  });

  it("selects on click and tells the model", () => {
    const { el, events } = mount(simpleTrace());
    el.querySelector('[data-node-id="n3"]').dispatchEvent(new MouseEvent("click", { bubbles: true }));
    expect(events).toContainEqual(["select", "n3"]);
    expect(el.querySelector('[data-node-id="n3"]').classList.contains("selected")).toBe(true);
    expect(el.querySelector('[data-role="inspector"]').textContent).toContain("_saved_self");
  });

  it("switches views and keeps the selection", () => {
    const { el, app, events } = mount(simpleTrace(), { selected: "n3" });
    el.querySelector('[data-view="forward"]').click();
    expect(events).toContainEqual(["view", "forward"]);
    expect(el.querySelector('[data-node-id="o1"]').classList.contains("selected")).toBe(true);
    expect(el.querySelector('[data-node-id="t0"]').getAttribute("data-label")).toBe("a");
    app.setView("backward");
    expect(el.querySelector('[data-node-id="n3"]').classList.contains("selected")).toBe(true);
  });

  it("steps the timeline: the node lights up and the inspector follows", () => {
    const { el, events } = mount(simpleTrace());
    el.querySelector('[data-role="next"]').click();
    expect(events).toContainEqual(["step", 1]);
    expect(el.querySelector('[data-node-id="n3"]').classList.contains("current")).toBe(true);
    expect(el.querySelectorAll(".edge.lit")).toHaveLength(2);
    expect(el.querySelector('[data-role="inspector"] .title').textContent).toBe("MulBackward0");
    el.querySelector('[data-role="next"]').click();
    expect(el.querySelector('[data-node-id="n3"]').classList.contains("done")).toBe(true);
    expect(el.querySelector('[data-role="inspector"]').getAttribute("data-selected")).toBe("n4");
  });

  it("says something friendly for an empty trace", () => {
    const { el } = mount({ tensors: [], ops: [], nodes: [], steps: [] });
    expect(el.querySelector(".nbgrad-widget").classList.contains("empty")).toBe(true);
    expect(el.querySelector('[data-role="message"]').textContent).toContain("Nothing to draw");
    expect(el.querySelectorAll("[data-node-id]")).toHaveLength(0);
  });

  it("shows an error banner for a trace stopped by an exception", () => {
    const trace = simpleTrace();
    trace.status.error = "ValueError: <b>bad</b>";
    const { el } = mount(trace);
    const banner = el.querySelector('[data-role="banner"]');
    expect(banner.textContent).toContain("ValueError: <b>bad</b>");
    expect(banner.querySelector("b")).toBeNull();
  });

  it("refuses a schema version it does not know, with a message", () => {
    const trace = simpleTrace();
    trace.version = 3;
    const { el } = mount(trace);
    expect(el.querySelector('[data-role="banner"]').textContent).toContain("schema version 3");
    expect(el.querySelectorAll("[data-node-id]")).toHaveLength(0);
  });

  it("opens a large trace collapsed and expands a group on click", () => {
    const { el } = mount(layeredTrace(60), { view: "forward" });
    const groups = el.querySelectorAll('[data-kind="group"]');
    expect(groups).toHaveLength(1);
    expect(groups[0].getAttribute("data-node-id")).toBe("group:model");
    groups[0].dispatchEvent(new MouseEvent("click", { bubbles: true }));
    expect(el.querySelectorAll('[data-kind="group"]')).toHaveLength(60);
    el.querySelector('[data-node-id="group:model.layers.7"]').dispatchEvent(new MouseEvent("click", { bubbles: true }));
    expect(el.querySelector('[data-label="model.layers.7.weight"]')).not.toBeNull();
  });
});
