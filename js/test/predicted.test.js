import { describe, expect, it } from "vitest";
import { predictedSteps } from "../src/predicted.js";
import { indexTrace } from "../src/trace.js";
import { stepLabel } from "../src/timeline.js";
import { simpleTrace } from "./fixtures.js";

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
