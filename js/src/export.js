// Export the drawing as it is now, for slides and papers: an SVG that opens on its own (in a
// browser, Inkscape) and a PNG at twice the drawing's size.
//
// "As it is now" is the current view (forward or backward) with its groups folded or open,
// reshapes hidden or not, the neighbourhood if only that is shown, and its marks (selection,
// timeline step, search matches, a failed call), whole: the entire drawing at scale 1, not only
// the part the pan and zoom show. A drawing too large for the page's DOM (draw.js's far view) is
// exported as that outline.
//
// The page's stylesheet does not travel with an SVG file, so every drawn element's computed
// style (the properties below) is written into its `style` attribute.

import { h } from "./dom.js";
import { CULL_MIN_NODES } from "./draw.js";

export const EXPORT_PADDING = 16; // px of background around the drawing
export const PNG_SCALE = 2; // PNG pixels per drawing unit
// Browsers refuse a canvas past these (Chromium: 32767 px a side, 268 million pixels); a drawing
// that would pass them is scaled down to fit, never cut.
export const MAX_CANVAS_SIDE = 16384;
export const MAX_CANVAS_PIXELS = 16384 * 16384;
const BACKGROUND = "#ffffff";
// what the widget's stylesheet sets on the drawing's elements
const STYLE_PROPERTIES = [
  "fill",
  "fill-opacity",
  "stroke",
  "stroke-width",
  "stroke-dasharray",
  "stroke-opacity",
  "opacity",
  "font-family",
  "font-size",
  "font-weight",
  "font-style",
  "text-anchor",
  "dominant-baseline",
  "visibility",
];
// attributes that only mean something in the live widget
const LIVE_ATTRIBUTES = ["tabindex", "role", "data-role"];

/** The size of the PNG for a drawing of width x height: PNG_SCALE times, or less if a browser
 * could not make the canvas. */
export function pngSize(width, height, scale = PNG_SCALE) {
  let k = scale;
  k = Math.min(k, MAX_CANVAS_SIDE / Math.max(width, 1), MAX_CANVAS_SIDE / Math.max(height, 1));
  k = Math.min(k, Math.sqrt(MAX_CANVAS_PIXELS / Math.max(width * height, 1)));
  return { width: Math.max(1, Math.round(width * k)), height: Math.max(1, Math.round(height * k)), scale: k };
}

/** Copy the computed style of each element of `original` onto the matching element of `copy`
 * (the same tree, cloned). Hidden elements are left out of the copy. */
function inlineStyles(original, copy) {
  const view = original.ownerDocument.defaultView;
  const originals = [original, ...original.querySelectorAll("*")];
  const copies = [copy, ...copy.querySelectorAll("*")];
  const hidden = [];
  originals.forEach((el, i) => {
    const target = copies[i];
    if (!target) return;
    const style = view.getComputedStyle(el);
    if (style.display === "none") {
      hidden.push(target);
      return;
    }
    // what the parent's style already gives (every property here but opacity is inherited)
    const parent = el.parentElement && el !== original ? view.getComputedStyle(el.parentElement) : null;
    const declarations = [];
    for (const property of STYLE_PROPERTIES) {
      const value = style.getPropertyValue(property);
      if (!value || (parent && property !== "opacity" && parent.getPropertyValue(property) === value)) continue;
      if (property === "opacity" && value === "1") continue;
      declarations.push(`${property}:${value}`);
    }
    if (declarations.length) target.setAttribute("style", declarations.join(";"));
    else target.removeAttribute("style");
    for (const name of LIVE_ATTRIBUTES) target.removeAttribute(name);
  });
  for (const el of hidden) el.remove();
}

/**
 * The SVG document (text) of a drawing: `svg` the widget's <svg>, `root` its viewport group,
 * `size` the drawing's { width, height } (layout units). Everything of the drawing must be in
 * the DOM (the app draws it all first).
 */
export function svgDocument(svg, root, size) {
  const width = Math.ceil(size.width + 2 * EXPORT_PADDING);
  const height = Math.ceil(size.height + 2 * EXPORT_PADDING);
  const copy = svg.cloneNode(true);
  inlineStyles(svg, copy);
  // as a namespace declaration (a plain attribute would be written twice by some serializers)
  copy.setAttributeNS("http://www.w3.org/2000/xmlns/", "xmlns", "http://www.w3.org/2000/svg");
  copy.setAttribute("width", String(width));
  copy.setAttribute("height", String(height));
  copy.setAttribute("viewBox", `0 0 ${width} ${height}`);
  copy.removeAttribute("class");
  copy.setAttribute("style", `${copy.getAttribute("style") || ""};background:${BACKGROUND}`.replace(/^;/, ""));
  // the pan and zoom give way to the drawing at scale 1, inside the padding
  const rootIndex = [...svg.querySelectorAll("*")].indexOf(root);
  const copiedRoot = rootIndex >= 0 ? copy.querySelectorAll("*")[rootIndex] : null;
  if (copiedRoot) copiedRoot.setAttribute("transform", `translate(${EXPORT_PADDING},${EXPORT_PADDING})`);
  const background = svg.ownerDocument.createElementNS("http://www.w3.org/2000/svg", "rect");
  for (const [key, value] of Object.entries({ x: 0, y: 0, width, height, fill: BACKGROUND })) background.setAttribute(key, String(value));
  copy.insertBefore(background, copy.firstChild && copy.firstChild.nextSibling);
  const text = new XMLSerializer().serializeToString(copy);
  return { text: `<?xml version="1.0" encoding="UTF-8"?>\n${text}\n`, width, height };
}

/** A PNG (a Blob) of an SVG document, drawn on a canvas at PNG_SCALE. */
export async function pngOf(svgText, width, height) {
  const size = pngSize(width, height);
  const url = URL.createObjectURL(new Blob([svgText], { type: "image/svg+xml" }));
  try {
    const image = new Image();
    image.decoding = "sync";
    await new Promise((resolve, reject) => {
      image.onload = resolve;
      image.onerror = () => reject(new Error("the browser could not draw the SVG"));
      image.src = url;
    });
    const canvas = h("canvas", { width: size.width, height: size.height });
    const context = canvas.getContext("2d");
    context.fillStyle = BACKGROUND;
    context.fillRect(0, 0, size.width, size.height);
    context.drawImage(image, 0, 0, size.width, size.height);
    return await new Promise((resolve, reject) => canvas.toBlob((blob) => (blob ? resolve(blob) : reject(new Error("the browser could not make the PNG"))), "image/png"));
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** Let the browser save `blob` as a file called `name`. */
export function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const link = h("a", { href: url, download: name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** A file name for an export: the trace's name (or "autograd-graph") and the view. */
export function exportName(trace, view, extension) {
  const base = String((trace && trace.name) || "autograd-graph").replace(/[^\w.-]+/g, "_");
  return `${base}-${view}.${extension}`;
}

/**
 * The toolbar's two buttons. `drawing()` gives the current drawing's { text, width, height }
 * (svgDocument's), or null when nothing is drawn; `name(extension)` the file name;
 * `onExport(drawing)` hears each export (the widget sends the SVG to the kernel).
 */
export function createExportButtons({ drawing, name, onExport }) {
  const say = (button, text) => {
    button.title = text;
    button.setAttribute("data-error", text);
  };
  const svgButton = h("button", {
    type: "button",
    class: "export-button",
    "data-role": "export-svg",
    text: "SVG",
    title: "download the drawing as it is now as an SVG file (styles included: it opens on its own)",
    onclick: () => {
      const current = drawing();
      if (!current) return;
      download(new Blob([current.text], { type: "image/svg+xml" }), name("svg"));
      if (onExport) onExport(current);
    },
  });
  const pngButton = h("button", {
    type: "button",
    class: "export-button",
    "data-role": "export-png",
    text: "PNG",
    title: `download the drawing as it is now as a PNG image, at ${PNG_SCALE}× its size`,
    onclick: async () => {
      const current = drawing();
      if (!current) return;
      pngButton.disabled = true;
      try {
        download(await pngOf(current.text, current.width, current.height), name("png"));
        if (onExport) onExport(current);
      } catch (error) {
        say(pngButton, `the PNG could not be made: ${error.message}`);
      } finally {
        pngButton.disabled = false;
      }
    },
  });
  return h("span", { class: "export-buttons", title: "export the drawing" }, svgButton, pngButton);
}

export const REPORT_DELAY_MS = 500; // the view has settled when it has not changed for this long
// A drawing this small is all in the DOM already (draw.js), so copying it costs little; a larger
// one would have to be drawn whole for the copy, a pause after every click: it goes to the
// kernel only when the user exports it from the toolbar.
export const REPORT_MAX_NODES = CULL_MIN_NODES;

/**
 * Tell the kernel about the drawing once the view settles (GraphWidget.save_svg writes the
 * latest): `schedule()` after each change; the report goes `delay` ms after the last one, only
 * while the widget is on a page, only for drawings of at most REPORT_MAX_NODES nodes.
 * `drawing()` as for the buttons, `isShown()` whether the widget is on a page, `nodeCount()`
 * the drawn nodes, `send(drawing)` the report.
 */
export function createDrawingReporter({ drawing, isShown, nodeCount, send, delay = REPORT_DELAY_MS }) {
  let timer = null;
  const report = () => {
    timer = null;
    if (!isShown() || nodeCount() > REPORT_MAX_NODES) return;
    const current = drawing();
    if (current) send(current);
  };
  return {
    schedule() {
      if (!send) return;
      if (timer !== null) clearTimeout(timer);
      timer = setTimeout(report, delay);
    },
    stop() {
      if (timer !== null) clearTimeout(timer);
      timer = null;
    },
  };
}
