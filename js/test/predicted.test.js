import { describe, expect, it } from "vitest";
import { ReadyQueue, predictedSteps } from "../src/predicted.js";
import { indexTrace } from "../src/trace.js";
import { stepLabel } from "../src/timeline.js";
import { fourWeightsTrace, simpleTrace, smallMlpTrace } from "./fixtures.js";

describe("a trace without a backward pass", () => {
  it("steps through the order backward() would run, as the engine ran it when recorded", () => {
    const recorded = simpleTrace(); // e = (a + b) * d; e.backward(): the engine's own order
    const forwardOnly = { ...simpleTrace(), steps: [], passes: [], accumulations: [] };
    const predicted = predictedSteps(forwardOnly);
    expect(predicted.map((s) => s.node)).toEqual(recorded.steps.map((s) => s.node));
    expect(predicted.every((s) => s.predicted)).toBe(true);
    const index = indexTrace(forwardOnly);
    expect(index.steps).toHaveLength(5);
    expect(stepLabel(index, 0)).toContain("no backward recorded");
    expect(stepLabel(index, 1)).toBe("step 1 of 5: MulBackward0 (the order backward() would follow; none was recorded)");
  });

  it("keeps the recorded steps when there are some", () => {
    expect(indexTrace(simpleTrace()).steps.some((s) => s.predicted)).toBe(false);
    expect(predictedSteps(simpleTrace())).toEqual([]);
  });
});

describe("the ready queue", () => {
  it("gives equal nodes in the order PyTorch's heap does (tests/test_ready_queue.py checks it against PyTorch)", () => {
    const queue = new ReadyQueue(() => 1);
    for (let i = 0; i < 5; i++) queue.push(i);
    expect([0, 1, 2, 3, 4].map(() => queue.pop())).toEqual([0, 2, 4, 1, 3]);
  });

  it("gives the highest rank first", () => {
    const ranks = [5, 9, 1, 9, 7, 9, 2];
    const queue = new ReadyQueue((i) => ranks[i]);
    ranks.forEach((_, i) => queue.push(i));
    const popped = ranks.map(() => ranks[queue.pop()]);
    expect(popped).toEqual([...ranks].sort((a, b) => b - a));
  });
});

describe("predicted against recorded", () => {
  it("predicts the order the engine ran on notebook 2's example and a small network", () => {
    for (const recorded of [fourWeightsTrace(), smallMlpTrace()]) {
      const forwardOnly = { ...structuredClone(recorded), steps: [], passes: [], accumulations: [] };
      expect(predictedSteps(forwardOnly).map((s) => s.node)).toEqual(recorded.steps.map((s) => s.node));
    }
  });
});
