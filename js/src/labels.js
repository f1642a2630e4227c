// The texts drawn in a node and the size of its box, measured in the browser's font.
//
// A box is as wide as its widest text (plus padding), up to MAX_TEXT_WIDTH; a longer text is
// shortened at a word boundary ("linalg_vector_norm in F.cosine…") and the whole text goes in the
// node's tooltip (draw.js). Widths come from a canvas's measureText in the font the page really
// uses (setLabelFont); where there is no canvas (jsdom, the tests) a character-width estimate
// stands in. draw.js checks the drawn texts against their boxes once they are on the page.

export const LABEL_FONT_PX = 13; // the node's first line (its class or tensor name), bold
export const SUB_FONT_PX = 12; // its second line
export const GROUP_TITLE_FONT_PX = 12;
export const MIN_SCREEN_FONT_PX = 11; // no graph text is drawn smaller on screen by fit or the first view
export const NODE_HEIGHT = 42;
export const BOX_PADDING = 12; // px between a text and its box's side
export const MIN_BOX_WIDTH = 56;
export const MAX_TEXT_WIDTH = 240; // px; longer texts are shortened (the tooltip has them whole)
export const CHAR_WIDTH = 0.62; // the fallback: one character's width, in ems (bold is wider)
export const DEFAULT_FONT_FAMILY = 'system-ui, -apple-system, "Segoe UI", sans-serif';

/** The smallest zoom at which every graph text is at least MIN_SCREEN_FONT_PX on screen. */
export const MIN_READABLE_SCALE = MIN_SCREEN_FONT_PX / Math.min(LABEL_FONT_PX, SUB_FONT_PX, GROUP_TITLE_FONT_PX);

let fontFamily = DEFAULT_FONT_FAMILY;
let context = null; // a 2D canvas context for measureText, or null where there is none
const widths = new Map(); // "weight size|text" -> px, in the current font family
let sizes = new WeakMap(); // drawn node -> { width, height, label, sub }

function measuringContext() {
  if (context !== null) return context || null;
  try {
    // OffscreenCanvas: every current browser has it, jsdom does not (and would log an error for
    // a <canvas>'s getContext), so the tests take the estimate below
    context = typeof OffscreenCanvas === "function" ? new OffscreenCanvas(1, 1).getContext("2d") : false;
  } catch {
    context = false;
  }
  return context || null;
}

/** Use this font family (the page's computed one) for measuring. Returns whether it changed. */
export function setLabelFont(family) {
  const next = String(family || "").trim() || DEFAULT_FONT_FAMILY;
  if (next === fontFamily) return false;
  fontFamily = next;
  widths.clear();
  sizes = new WeakMap();
  return true;
}

export function labelFont() {
  return fontFamily;
}

/** The width in px of `text` at `px` font size (`bold` for the node's first line). */
export function textWidth(text, px, bold = false) {
  const t = String(text ?? "");
  if (!t) return 0;
  const key = `${bold ? 6 : 4}${px}|${t}`;
  let width = widths.get(key);
  if (width !== undefined) return width;
  const ctx = measuringContext();
  if (ctx) {
    ctx.font = `${bold ? 600 : 400} ${px}px ${fontFamily}`;
    width = ctx.measureText(t).width;
  } else {
    width = t.length * px * CHAR_WIDTH * (bold ? 1.08 : 1);
  }
  widths.set(key, width);
  return width;
}

// A word ends after a run of letters/digits and the separators that follow it: spaces and the
// punctuation of names ("model.fc1", "x_hat", "f(u, v)#2").
const WORD = /[^\s._,:;()[\]{}#/\\-]*[\s._,:;()[\]{}#/\\-]*/g;

/** `text` shortened to fit `maxWidth` px (measured by `measure(text)`), cut at a word boundary
 * with an ellipsis; a first word too long on its own is cut inside it. */
export function shortenToWidth(text, maxWidth, measure) {
  const t = String(text ?? "");
  if (measure(t) <= maxWidth) return t;
  const words = t.match(WORD).filter(Boolean);
  let kept = "";
  for (const word of words) {
    const next = kept + word;
    // trailing separators are dropped before the ellipsis ("F.cosine…", not "F.cosine_…")
    if (measure(`${next.replace(/[\s._,:;([{#/\\-]+$/, "")}…`) > maxWidth) break;
    kept = next;
  }
  kept = kept.replace(/[\s._,:;([{#/\\-]+$/, "");
  if (kept) return `${kept}…`;
  // one long word: as many characters as fit
  let end = t.length - 1;
  while (end > 1 && measure(`${t.slice(0, end)}…`) > maxWidth) end -= 1;
  return `${t.slice(0, end)}…`;
}

/** A text shortened to `max` characters at a word boundary (the width-free form, for places
 * that only count characters). */
export function shorten(text, max = 32) {
  return shortenToWidth(text, max, (s) => s.length);
}

/** A drawn node's box and the texts drawn in it (shortened to fit), measured once per node. */
export function nodeLabels(node) {
  let size = sizes.get(node);
  if (size) return size;
  const labelWidth = (t) => textWidth(t, LABEL_FONT_PX, true);
  const subWidth = (t) => textWidth(t, SUB_FONT_PX, false);
  const label = shortenToWidth(node.label, MAX_TEXT_WIDTH, labelWidth);
  const sub = node.sub ? shortenToWidth(node.sub, MAX_TEXT_WIDTH, subWidth) : "";
  // a folded group's "+" badge sits in the top right corner: room for it beside the label
  const badge = node.kind === "group" ? 2 * 14 : 0;
  const widest = Math.max(labelWidth(label) + badge, subWidth(sub));
  size = { width: Math.max(MIN_BOX_WIDTH, Math.ceil(widest) + 2 * BOX_PADDING), height: NODE_HEIGHT, label, sub };
  sizes.set(node, size);
  return size;
}

/** A drawn node's box size, from its (shortened) texts. */
export function nodeSize(node) {
  const { width, height } = nodeLabels(node);
  return { width, height };
}
