// Where the minimap may sit: a corner of the graph's stage with no node under it, so that the
// overview never hides a part of the drawing (a learner reading a small graph should not have
// to move a box out of the way to read a label).

export const CORNER_INSET = 8; // px between the minimap and the stage's sides (style.css's .minimap)
export const CORNER_GAP = 4; // px kept free between the minimap and the nearest node

/** The four corner rectangles of a `vw` x `vh` stage for a `w` x `h` minimap, in the order they
 * are tried: bottom-right (where an overview is looked for), bottom-left, top-right, top-left. */
export function cornerRects(vw, vh, w, h, inset = CORNER_INSET) {
  const right = vw - inset - w;
  const bottom = vh - inset - h;
  return [
    { corner: "bottom-right", x: right, y: bottom, width: w, height: h },
    { corner: "bottom-left", x: inset, y: bottom, width: w, height: h },
    { corner: "top-right", x: right, y: inset, width: w, height: h },
    { corner: "top-left", x: inset, y: inset, width: w, height: h },
  ];
}

/** Whether two rectangles ({ x, y, width, height }) overlap, `gap` px around `a` included. */
export function overlaps(a, b, gap = 0) {
  return a.x - gap < b.x + b.width && b.x < a.x + a.width + gap && a.y - gap < b.y + b.height && b.y < a.y + a.height + gap;
}

/** The first of `corners` that no box of `boxes` overlaps (boxes in the same screen
 * coordinates), or null when every corner has a node under it. `boxes` is iterated once per
 * corner tried: linear in the drawing. */
export function freeCorner(corners, boxes, gap = CORNER_GAP) {
  for (const corner of corners) {
    let free = true;
    for (const box of boxes) {
      if (overlaps(corner, box, gap)) {
        free = false;
        break;
      }
    }
    if (free) return corner;
  }
  return null;
}

/** The screen boxes of laid-out nodes (centres and sizes in drawing coordinates) under the
 * viewport transform (x, y, k): an iterable made afresh each time it is walked (no array of
 * 10,000 boxes per pan). */
export function screenBoxes(positions, transform) {
  const { x, y, k } = transform;
  return {
    *[Symbol.iterator]() {
      for (const b of positions.values()) {
        yield { x: x + (b.x - b.width / 2) * k, y: y + (b.y - b.height / 2) * k, width: b.width * k, height: b.height * k };
      }
    },
  };
}
