// The fixtures the widget's tests use follow the trace schema (nbgrad/trace/schema.json), the
// contract Python's tests check real traces against: a fixture cannot hold what Python never writes.

import Ajv2020 from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import traceSchema from "../../nbgrad/trace/schema.json";
import { fourWeightsTrace, layeredTrace, simpleTrace, smallMlpTrace } from "./fixtures.js";

// strictTuples off: a readable formula tree is an open tuple (its first item says what it is)
const validate = new Ajv2020({ allErrors: true, strict: true, strictTuples: false }).compile(traceSchema);

function problems(trace) {
  validate(trace);
  return (validate.errors || []).map((e) => `${e.instancePath} ${e.message}`);
}

describe("the trace schema", () => {
  it("accepts every fixture, recorded or built", () => {
    for (const trace of [simpleTrace(), fourWeightsTrace(), smallMlpTrace(), layeredTrace(3), layeredTrace(4, { backward: true })]) {
      expect(problems(trace)).toEqual([]);
    }
  });

  it("refuses a trace with a key Python does not write, or a wrong kind of id", () => {
    const misspelt = simpleTrace();
    misspelt.nodes[0].nxt = [];
    expect(problems(misspelt).length).toBeGreaterThan(0);
    const wrongId = simpleTrace();
    wrongId.tensors[0].grad_fn = "t1";
    expect(problems(wrongId).length).toBeGreaterThan(0);
  });
});
