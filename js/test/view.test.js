// The widget reads well at any size (issue 16): where the minimap sits, where group titles
// go, what the first view frames when a node is selected early, and arrays loaded on opening.

import { describe, expect, it, vi } from "vitest";
import { createApp } from "../src/app.js";
import { cornerRects, freeCorner, screenBoxes } from "../src/corner.js";
import { renderValue } from "../src/values.js";
import { placeTitles, TITLE_HEIGHT } from "../src/titles.js";
import { layeredTrace } from "./fixtures.js";

const overlap = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

describe("the minimap's corner", () => {
  // an 800 x 500 stage, a 100 x 60 map: corners at x 8 or 692, y 8 or 432
  const corners = cornerRects(800, 500, 100, 60);

  it("lists the four corners, bottom-right first, 8 px from the sides", () => {
    expect(corners.map((c) => [c.corner, c.x, c.y])).toEqual([
      ["bottom-right", 692, 432],
      ["bottom-left", 8, 432],
      ["top-right", 692, 8],
      ["top-left", 8, 8],
    ]);
  });

  it("takes the first corner with no node under it, a 4 px gap included", () => {
    expect(freeCorner(corners, []).corner).toBe("bottom-right");
    // a node ending 2 px left of the bottom-right map: within the gap, so that corner is taken
    const nearRight = { x: 600, y: 440, width: 90, height: 30 };
    expect(freeCorner(corners, [nearRight]).corner).toBe("bottom-left");
    // 10 px left of it: free
    expect(freeCorner(corners, [{ ...nearRight, x: 582 }]).corner).toBe("bottom-right");
    // a wide row along the bottom: the top-right corner
    expect(freeCorner(corners, [{ x: 0, y: 400, width: 800, height: 40 }]).corner).toBe("top-right");
  });

  it("gives none when every corner has a node under it", () => {
    const everywhere = corners.map((c) => ({ x: c.x + 10, y: c.y + 10, width: 20, height: 20 }));
    expect(freeCorner(corners, everywhere)).toBeNull();
  });

  it("turns laid-out centres into screen boxes under a pan and zoom, walkable twice", () => {
    const positions = new Map([["a", { x: 100, y: 50, width: 40, height: 20 }]]);
    const boxes = screenBoxes(positions, { x: 10, y: -5, k: 2 });
    // left = 10 + (100 - 20) * 2 = 170, top = -5 + (50 - 10) * 2 = 75
    expect([...boxes]).toEqual([{ x: 170, y: 75, width: 80, height: 40 }]);
    expect([...boxes]).toHaveLength(1);
  });
});

describe("group titles", () => {
  const widthOf = () => 100;

  it("stay at the box's top-left corner when nothing is there", () => {
    const laid = { positions: new Map(), edges: [], groups: [{ path: "m", x: 0, y: 0, width: 300, height: 200 }] };
    // the text starts 8 px in; the background 3 px before it; 1 px below the box's top
    expect(placeTitles(laid, widthOf).get("m")).toEqual({ x: 5, y: 1, width: 106, height: TITLE_HEIGHT });
  });

  it("move off a node, off another title, and off an edge and another box's border", () => {
    const positions = new Map([
      // a node of another group lying over m's top-left corner (its box spans x 0..80, y 0..30)
      ["n", { x: 40, y: 15, width: 80, height: 30 }],
    ]);
    const groups = [
      { path: "m", x: 0, y: 0, width: 400, height: 200 },
      // a box starting at the same top-left: its title would print over m's
      { path: "m.a", x: 90, y: 0, width: 300, height: 150 },
      // a box whose border runs down through the top band of m at x = 250
      { path: "k", x: 250, y: -40, width: 300, height: 100 },
    ];
    // an edge running straight down through m's top band at x = 330
    const edges = [{ points: [{ x: 330, y: -50 }, { x: 330, y: 120 }] }];
    const titles = placeTitles({ positions, edges, groups }, widthOf);
    const nodeBox = { x: 0, y: 0, width: 80, height: 30 };
    const placed = [...titles.values()];
    for (const t of placed) expect(overlap(t, nodeBox)).toBe(false);
    for (let i = 0; i < placed.length; i++) for (let j = i + 1; j < placed.length; j++) expect(overlap(placed[i], placed[j])).toBe(false);
    // each title inside its own box
    for (const g of groups) {
      const t = titles.get(g.path);
      expect(t.x).toBeGreaterThanOrEqual(g.x);
      expect(t.x + t.width).toBeLessThanOrEqual(g.x + g.width);
      expect(t.y).toBeGreaterThanOrEqual(g.y);
    }
    // m's title: not across the edge at x = 330 nor k's left border at x = 250
    const m = titles.get("m");
    const crosses = (x) => m.x < x && x < m.x + m.width;
    expect(crosses(330) || crosses(250)).toBe(false);
  });
});

describe("the first view with a node selected early", () => {
  it("frames the selected node, not the loss, when the whole graph cannot be read", async () => {
    const el = document.createElement("div");
    document.body.append(el);
    const trace = layeredTrace(30, { backward: true });
    const app = createApp(el, { trace });
    // the first node recorded: the first layer's, at the far end of the graph from the loss
    const far = trace.nodes[0].id;
    app.select(far); // from Python, before the first fit (it runs on the next frame)
    await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
    expect(app.state.selected).toBe(far);
    expect(el.querySelector(`[data-node-id="${far}"]`).classList.contains("selected")).toBe(true);
    expect(el.querySelector('[data-role="fit-note"]').textContent).toContain("the selected node");
    // its box on screen: jsdom's stage is 800 x 500 (viewport.js's default)
    const [, tx, ty, k] = el.querySelector("g.viewport").getAttribute("transform").match(/translate\(([-\d.e]+),([-\d.e]+)\) scale\(([-\d.e]+)\)/).map(Number);
    const b = app.state.laid.positions.get(far);
    const left = tx + (b.x - b.width / 2) * k;
    const top = ty + (b.y - b.height / 2) * k;
    expect(left).toBeGreaterThanOrEqual(0);
    expect(top).toBeGreaterThanOrEqual(0);
    expect(left + b.width * k).toBeLessThanOrEqual(800);
    expect(top + b.height * k).toBeLessThanOrEqual(500);
    // and the graph really is too large to read whole there (else this proves nothing)
    expect(app.state.laid.height * k).toBeGreaterThan(500);
    app.destroy();
  });
});

describe("arrays loaded as the inspector opens", () => {
  const summaryOf = (shape, buffer) => ({ shape, dtype: "float32", stats: { min: 0, max: 1, mean: 0.5, std: 0.1 }, preview: [0, 1], buffer });

  it("loads an array of up to 1,024 elements from the kernel without a click", async () => {
    const fetchBuffer = vi.fn(() => Promise.resolve({ ok: true, shape: [32, 32], dtype: "float32", data: Array.from({ length: 32 }, () => Array(32).fill(0.5)) }));
    const el = renderValue(summaryOf([32, 32], "b0"), "float32", { fetchBuffer });
    expect(fetchBuffer).toHaveBeenCalledWith("b0");
    await new Promise((r) => setTimeout(r, 0));
    expect(el.querySelector(".load-status").textContent).toContain("32×32 float32, 1024 values");
    expect(el.querySelector("button.load-full")).toBeNull();
  });

  it("leaves a larger array to the button", async () => {
    const fetchBuffer = vi.fn(() => Promise.resolve({ ok: true, shape: [1025], dtype: "float32", data: Array(1025).fill(1) }));
    const el = renderValue(summaryOf([1025], "b1"), "float32", { fetchBuffer });
    expect(fetchBuffer).not.toHaveBeenCalled();
    el.querySelector("button.load-full").click();
    expect(fetchBuffer).toHaveBeenCalledWith("b1");
  });

  it("without a kernel, waits for the click and says why it cannot load", () => {
    const el = renderValue(summaryOf([20], "b2"), "float32", {});
    expect(el.querySelector(".load-status").textContent).toBe("");
    el.querySelector("button.load-full").click();
    expect(el.querySelector(".load-status").textContent).toContain("no kernel");
  });

  it("shows a failed automatic load as an error and keeps the button", async () => {
    const el = renderValue(summaryOf([20], "b3"), "float32", { fetchBuffer: () => Promise.reject(new Error("kernel gone")) });
    await new Promise((r) => setTimeout(r, 0));
    expect(el.querySelector(".load-status").textContent).toContain("kernel gone");
    expect(el.querySelector("button.load-full").disabled).toBe(false);
  });
});
