// Where each open group's title goes, so that it can be read: on no node, on no other title,
// and where possible crossed by no edge and no other group's border.
//
// A title's first choice is its box's top-left corner. In a tangled drawing (an unrolled RNN,
// where the boxes of a layer used at every step overlap, see layout.js's boundingBoxes) that
// corner may lie on a node, another group's title, an edge or another box's border; the title
// then slides right along its box's top, then down a row at a time, to the first free place.
// What is left under a title (an edge or a border, when no place avoids them) is hidden by the
// title's background, drawn above edges and boxes (draw.js): the text is never crossed.

export const TITLE_HEIGHT = 14; // px of a title's row (its 12 px text and a little air)
export const TITLE_PAD = 3; // px of background left and right of the text
const INSET = 8; // px from the box's left side to its title's text
const STEP = 12; // px a title slides at a time
const MAX_ROWS = 4; // rows tried from the box's top down
const CELL = 240; // px: the side of a cell of the obstacle grid

/** A grid of rectangles for "what is near this rectangle" in about constant time: each
 * rectangle is filed under every cell it touches. */
function createGrid() {
  const cells = new Map();
  const keys = (r, visit) => {
    const i0 = Math.floor(r.x / CELL);
    const i1 = Math.floor((r.x + r.width) / CELL);
    const j0 = Math.floor(r.y / CELL);
    const j1 = Math.floor((r.y + r.height) / CELL);
    for (let i = i0; i <= i1; i++) for (let j = j0; j <= j1; j++) visit(`${i},${j}`);
  };
  return {
    add(r) {
      keys(r, (key) => {
        if (!cells.has(key)) cells.set(key, []);
        cells.get(key).push(r);
      });
    },
    /** Whether any filed rectangle overlaps `r` (but those `ignore` says to). */
    hits(r, ignore = null) {
      let hit = false;
      keys(r, (key) => {
        if (hit) return;
        for (const o of cells.get(key) || []) {
          if (r.x < o.x + o.width && o.x < r.x + r.width && r.y < o.y + o.height && o.y < r.y + r.height && !(ignore && ignore(o))) {
            hit = true;
            return;
          }
        }
      });
      return hit;
    },
  };
}

/** The rectangles an edge's polyline covers: one per segment (its bounding box, at least 1 px
 * thick). A diagonal segment's box is larger than the segment: a title avoids a little more. */
function segmentBoxes(points) {
  const boxes = [];
  for (let i = 1; i < (points || []).length; i++) {
    const a = points[i - 1];
    const b = points[i];
    const x = Math.min(a.x, b.x);
    const y = Math.min(a.y, b.y);
    boxes.push({ x: x - 0.5, y: y - 0.5, width: Math.abs(a.x - b.x) + 1, height: Math.abs(a.y - b.y) + 1 });
  }
  return boxes;
}

/** The four sides of a group box as thin rectangles (its dashed border). */
function borderBoxes(box) {
  const t = 1;
  return [
    { x: box.x, y: box.y - t, width: box.width, height: 2 * t, owner: box.path },
    { x: box.x, y: box.y + box.height - t, width: box.width, height: 2 * t, owner: box.path },
    { x: box.x - t, y: box.y, width: 2 * t, height: box.height, owner: box.path },
    { x: box.x + box.width - t, y: box.y, width: 2 * t, height: box.height, owner: box.path },
  ];
}

/**
 * Place the titles of the laid-out groups.
 *
 * laid: { positions (node id -> centre and size), edges ([{ points }]), groups ([{ path, x, y,
 * width, height }]) }; textWidthOf(path) -> the px width of the title's (shortened) text.
 * Returns Map path -> { x, y, width, height }: the title's background rectangle (its text
 * starts TITLE_PAD px inside it, its baseline 3 px above its bottom).
 */
export function placeTitles(laid, textWidthOf) {
  const nodes = createGrid();
  for (const b of laid.positions.values()) nodes.add({ x: b.x - b.width / 2, y: b.y - b.height / 2, width: b.width, height: b.height });
  const lines = createGrid(); // edges and borders: avoided if possible, else covered
  for (const edge of laid.edges || []) for (const r of segmentBoxes(edge.points)) lines.add(r);
  const borders = createGrid();
  for (const box of laid.groups || []) for (const side of borderBoxes(box)) borders.add(side);
  const placed = createGrid();
  const titles = new Map();
  // in reading order: a title higher up (an outer group's, usually) chooses first
  const order = [...(laid.groups || [])].sort((a, b) => a.y - b.y || a.x - b.x);
  for (const box of order) {
    const width = textWidthOf(box.path) + 2 * TITLE_PAD;
    const candidates = [];
    for (let row = 0; row < MAX_ROWS; row++) {
      const y = box.y + 1 + row * TITLE_HEIGHT;
      if (y + TITLE_HEIGHT > box.y + box.height) break;
      for (let x = box.x + INSET - TITLE_PAD; x + width <= box.x + box.width - 2 || x === box.x + INSET - TITLE_PAD; x += STEP) {
        candidates.push({ x, y, width, height: TITLE_HEIGHT });
      }
    }
    if (!candidates.length) candidates.push({ x: box.x + INSET - TITLE_PAD, y: box.y + 1, width, height: TITLE_HEIGHT });
    // other groups' borders cross a title; its own do not (it sits inside them)
    const own = (side) => side.owner === box.path;
    const othersBorders = (r) => borders.hits(r, own);
    const readable = (r) => !nodes.hits(r) && !placed.hits(r);
    const choice =
      candidates.find((r) => readable(r) && !lines.hits(r) && !othersBorders(r)) || candidates.find(readable) || candidates[0];
    placed.add(choice);
    titles.set(box.path, choice);
  }
  return titles;
}
