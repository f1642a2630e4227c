import { describe, expect, it, vi } from "vitest";
import { clampStep, createTimeline, forwardHighlight, stepHighlight, stepLabel } from "../src/timeline.js";
import { indexTrace } from "../src/trace.js";
import { simpleTrace } from "./fixtures.js";

describe("the backward timeline", () => {
  const index = indexTrace(simpleTrace());

  it("clamps positions to 0..steps", () => {
    expect(clampStep(-3, 5)).toBe(0);
    expect(clampStep(9, 5)).toBe(5);
    expect(clampStep("2", 5)).toBe(2);
  });

  it("labels each position with the node that ran", () => {
    expect(stepLabel(index, 0)).toBe("before backward (5 steps)");
    expect(stepLabel(index, 1)).toBe("step 1 of 5: MulBackward0");
    expect(stepLabel(index, 2)).toBe("step 2 of 5: AccumulateGrad (d)");
  });

  it("lights the node that ran and the edges it sent gradients along", () => {
    expect(stepHighlight(index, 0).current).toBeNull();
    const first = stepHighlight(index, 1);
    expect(first.current).toBe("n3");
    expect(first.edges).toEqual([
      ["n3", "n0", 0],
      ["n3", "n4", 1],
    ]);
    const third = stepHighlight(index, 3);
    expect([...third.done]).toEqual(["n3", "n4"]);
    expect(forwardHighlight(index, first)).toMatchObject({ current: "o1", edges: [["t2", "o1", 0], ["t3", "o1", 1]] });
  });

  it("steps with the buttons and plays to the end", () => {
    vi.useFakeTimers();
    const host = document.createElement("div");
    const seen = [];
    const timeline = createTimeline(host, { index, onStep: (k) => seen.push(k), interval: 100 });
    const click = (role) => host.querySelector(`[data-role="${role}"]`).click();
    click("next");
    click("next");
    click("prev");
    click("last");
    click("first");
    expect(seen).toEqual([1, 2, 1, 5, 0]);
    expect(host.querySelector('[data-role="step-label"]').textContent).toBe("before backward (5 steps)");
    click("play");
    vi.advanceTimersByTime(1000);
    expect(timeline.step).toBe(5);
    expect(seen.slice(-5)).toEqual([1, 2, 3, 4, 5]);
    vi.useRealTimers();
  });
});
