import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import widget, { bufferFetcher, readTrace } from "../src/widget.js";
import { simpleTrace } from "./fixtures.js";

/** A stand-in for the anywidget model. */
function fakeModel(state) {
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
    send: (message) => sent.push(message),
    emit: (name, message, buffers) => (listeners[name] || []).forEach((fn) => fn(message, buffers)),
  };
}

describe("the anywidget entry", () => {
  it("reads the trace from gzip-compressed bytes, a DataView of them, or text", async () => {
    const json = JSON.stringify(simpleTrace());
    const zipped = gzipSync(Buffer.from(json));
    const bytes = new Uint8Array(zipped.buffer, zipped.byteOffset, zipped.byteLength);
    expect((await readTrace(bytes)).tensors).toHaveLength(5);
    expect((await readTrace(new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength))).nodes).toHaveLength(5);
    expect((await readTrace(json)).steps).toHaveLength(5);
    expect((await readTrace("{not json")).status.error).toContain("could not be read");
  });

  it("renders, and keeps selected and step in sync both ways", async () => {
    const model = fakeModel({ trace: JSON.stringify(simpleTrace()), selected: "", step: 0, view: "backward" });
    const el = document.createElement("div");
    const cleanup = await widget.render({ model, el });
    el.querySelector('[data-node-id="n3"]').dispatchEvent(new MouseEvent("click", { bubbles: true }));
    expect(model.get("selected")).toBe("n3");
    el.querySelector('[data-role="next"]').click();
    expect(model.get("step")).toBe(1);
    model.set("selected", "t0");
    expect(el.querySelector('[data-role="inspector"] .title').textContent).toBe("a");
    model.set("step", 3);
    expect(el.querySelector('[data-role="step-label"]').textContent).toBe("step 3 of 5: AddBackward0");
    cleanup();
  });

  it("asks the kernel for a buffer and matches the answer to the request", async () => {
    const model = fakeModel({});
    const { fetchBuffer, stop } = bufferFetcher(model);
    const first = fetchBuffer("b0");
    const second = fetchBuffer("b1");
    expect(model.sent).toEqual([
      { type: "fetch", buffer: "b0", request: 1 },
      { type: "fetch", buffer: "b1", request: 2 },
    ]);
    model.emit("msg:custom", { type: "buffer", request: 2, ok: false, error: "no such array" });
    model.emit("msg:custom", { type: "buffer", request: 1, ok: true, shape: [2], data: [1, 2] });
    await expect(first).resolves.toMatchObject({ data: [1, 2] });
    await expect(second).rejects.toThrow("no such array");
    stop();
  });

  it("decodes an array the kernel sends as little-endian bytes", async () => {
    const model = fakeModel({});
    const { fetchBuffer, stop } = bufferFetcher(model);
    const floats = fetchBuffer("b0");
    const ints = fetchBuffer("b1");
    const flags = fetchBuffer("b2");
    const bytes = new DataView(new Float32Array([0.5, -1, NaN, Infinity, 3, 4]).buffer);
    model.emit("msg:custom", { type: "buffer", request: 1, ok: true, shape: [2, 3], dtype: "float32", storage: "<f4" }, [bytes]);
    await expect(floats).resolves.toMatchObject({ data: [[0.5, -1, "NaN"], ["Infinity", 3, 4]] });
    const big = new BigInt64Array([7n, -2n]).buffer;
    model.emit("msg:custom", { type: "buffer", request: 2, ok: true, shape: [2], dtype: "int64", storage: "<i8" }, [big]);
    await expect(ints).resolves.toMatchObject({ data: [7, -2] });
    model.emit("msg:custom", { type: "buffer", request: 3, ok: true, shape: [], dtype: "bool", storage: "u1" }, [new Uint8Array([1])]);
    await expect(flags).resolves.toMatchObject({ data: true });
    stop();
  });

  it("says the kernel is gone when sending fails", async () => {
    const model = fakeModel({});
    model.send = () => {
      throw new Error("Comm is closed");
    };
    const { fetchBuffer, stop } = bufferFetcher(model);
    await expect(fetchBuffer("b0")).rejects.toThrow("the kernel cannot be reached (Comm is closed)");
    stop();
  });
});
