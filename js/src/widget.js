// The anywidget entry: render({ model, el }) connects the app to the kernel.
//
// Synced traits: trace (the trace JSON, gzip-compressed bytes), selected (a record id), step
// (timeline position), view ("forward" | "backward"), height (px; the handle at the foot sets it),
// practice (practice mode, js/src/practice.js) and practice_results (the learner's answers, sent
// to Python as they are given). Large arrays come on request: the app sends
// { type: "fetch", buffer, request } and the kernel answers { type: "buffer", request, ok, shape,
// dtype, storage } with the array's little-endian bytes as the message's one binary buffer
// (or { ..., data } as nested lists for a dtype no typed array holds).

import "./style.css";
import { createApp } from "./app.js";
import { nodeChecker } from "./nodecheck.js";
import { decodeArray } from "./values.js";

const FETCH_TIMEOUT_MS = 10000; // then the kernel is taken to be gone

function bytesOf(value) {
  if (value instanceof Uint8Array) return value;
  // (by its tag, not instanceof: a buffer may come from another realm, a frame or jsdom)
  if (Object.prototype.toString.call(value) === "[object ArrayBuffer]") return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  return null;
}

/** The trace from the model's value: gzip-compressed JSON bytes (or JSON text). */
export async function readTrace(value) {
  try {
    if (!value) return {};
    if (typeof value === "string") return JSON.parse(value);
    let bytes = bytesOf(value);
    if (!bytes) return value;
    if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
      const stream = new Response(bytes).body.pipeThrough(new DecompressionStream("gzip"));
      bytes = new Uint8Array(await new Response(stream).arrayBuffer());
    }
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch (error) {
    return { status: { error: `the trace could not be read (${error.message})` } };
  }
}

/** Ask the kernel for a whole buffer; resolves with its reply, rejects with an Error. */
export function bufferFetcher(model) {
  let next = 0;
  const waiting = new Map();
  const onMessage = (message, buffers) => {
    if (!message || message.type !== "buffer") return;
    const pending = waiting.get(message.request);
    if (!pending) return;
    waiting.delete(message.request);
    clearTimeout(pending.timer);
    if (!message.ok) {
      pending.reject(new Error(message.error || "the kernel could not send it"));
      return;
    }
    const bytes = buffers && buffers.length ? bytesOf(buffers[0]) : null;
    if (message.storage && bytes) {
      try {
        pending.resolve({ ...message, data: decodeArray(bytes, message.storage, message.shape, message.dtype) });
      } catch (error) {
        pending.reject(error);
      }
    } else pending.resolve(message);
  };
  model.on("msg:custom", onMessage);
  const fetchBuffer = (buffer) =>
    new Promise((resolve, reject) => {
      const request = ++next;
      const timer = setTimeout(() => {
        waiting.delete(request);
        reject(new Error("no answer from the kernel: it has stopped or restarted, or is busy. Run the cell again to inspect whole values"));
      }, FETCH_TIMEOUT_MS);
      waiting.set(request, { resolve, reject, timer });
      try {
        model.send({ type: "fetch", buffer, request });
      } catch (error) {
        clearTimeout(timer);
        waiting.delete(request);
        reject(new Error(`the kernel cannot be reached (${error && error.message ? error.message : error})`));
      }
    });
  const stop = () => {
    model.off("msg:custom", onMessage);
    for (const pending of waiting.values()) clearTimeout(pending.timer);
  };
  return { fetchBuffer, stop };
}

async function render({ model, el }) {
  const trace = await readTrace(model.get("trace"));
  const fetcher = bufferFetcher(model);
  const checker = nodeChecker(model);
  const push = (name, value) => {
    if (model.get(name) === value) return;
    model.set(name, value);
    model.save_changes();
  };
  const app = createApp(el, {
    trace,
    selected: model.get("selected") || null,
    step: model.get("step") || 0,
    view: model.get("view"),
    height: model.get("height"),
    onSelect: (id) => push("selected", id || ""),
    onStep: (k) => push("step", k),
    onView: (view) => push("view", view),
    onHeight: (px) => push("height", Math.round(px)),
    fetchBuffer: fetcher.fetchBuffer,
    checkNode: checker.checkNode,
    practice: !!model.get("practice"),
    practiceResults: model.get("practice_results") || [],
    onPracticeResults: (results) => {
      model.set("practice_results", results);
      model.save_changes();
    },
    // GraphWidget.save_svg writes the latest drawing the page sent (export.js)
    onDrawing: ({ text, width, height, view }) => model.send({ type: "drawing", svg: text, width, height, view }),
  });
  const onTrace = async () => app.setTrace(await readTrace(model.get("trace")));
  const onSelected = () => {
    const id = model.get("selected") || null;
    if (id !== app.state.selected) app.select(id);
  };
  const onStep = () => {
    const k = model.get("step") || 0;
    if (k !== app.state.step) app.setStep(k);
  };
  const onView = () => app.setView(model.get("view"));
  const onHeight = () => app.setHeight(model.get("height"));
  const onPractice = () => app.setPractice(!!model.get("practice"));
  model.on("change:trace", onTrace);
  model.on("change:selected", onSelected);
  model.on("change:step", onStep);
  model.on("change:view", onView);
  model.on("change:height", onHeight);
  model.on("change:practice", onPractice);
  return () => {
    model.off("change:trace", onTrace);
    model.off("change:selected", onSelected);
    model.off("change:step", onStep);
    model.off("change:view", onView);
    model.off("change:height", onHeight);
    model.off("change:practice", onPractice);
    fetcher.stop();
    checker.stop();
    app.destroy();
  };
}

export default { render };
