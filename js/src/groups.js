// Ops that ran inside an nn.Module form a group ("model.fc1"); groups nest by their dotted
// paths. A collapsed group is drawn as one node standing for everything inside it.

export const GROUP_PREFIX = "group:";

/** Every group path a view uses, with the ancestors that are modules too, parents first. */
export function groupPaths(view, modules = {}) {
  const paths = new Set();
  for (const node of view.nodes) {
    if (!node.group) continue;
    const parts = node.group.split(".");
    for (let i = 1; i <= parts.length; i++) {
      const prefix = parts.slice(0, i).join(".");
      if (prefix === node.group || prefix in modules) paths.add(prefix);
    }
  }
  return [...paths].sort((a, b) => a.split(".").length - b.split(".").length || (a < b ? -1 : 1));
}

/** Whether a drawn node lies inside group `path` (directly or in a group within it). */
export function inGroup(node, path) {
  return !!node.group && (node.group === path || node.group.startsWith(`${path}.`));
}

/** The outermost collapsed group that contains `path` (a group path), or null. */
export function collapsedAncestor(path, collapsed) {
  if (!path) return null;
  const parts = path.split(".");
  for (let i = 1; i <= parts.length; i++) {
    const prefix = parts.slice(0, i).join(".");
    if (collapsed.has(prefix)) return prefix;
  }
  return null;
}

/** What is drawn: the view with each collapsed group folded into one node. Edges between
 * folded nodes join their groups; edges inside a group disappear. */
export function visibleGraph(view, collapsed, modules = {}) {
  const nodes = [];
  const standIn = new Map(); // original id -> drawn id
  const groups = new Map(); // group id -> drawn group node
  const copies = new Map(); // original id -> its drawn copies' ids
  for (const node of view.nodes) {
    const folded = collapsedAncestor(node.group, collapsed);
    if (!folded) {
      nodes.push(node);
      standIn.set(node.id, node.id);
      // a leaf drawn once per use (fold.js): the node stands in its first drawn copy
      if (node.copyOf) {
        if (!copies.has(node.copyOf)) copies.set(node.copyOf, []);
        copies.get(node.copyOf).push(node.id);
        if (!standIn.has(node.copyOf)) standIn.set(node.copyOf, node.id);
      }
      continue;
    }
    if (node.copyOf && !standIn.has(node.copyOf)) standIn.set(node.copyOf, GROUP_PREFIX + folded);
    const id = GROUP_PREFIX + folded;
    standIn.set(node.id, id);
    let group = groups.get(id);
    if (!group) {
      group = {
        id,
        kind: "group",
        label: view.groupLabels?.[folded] ?? folded,
        sub: "",
        role: "group",
        group: folded.includes(".") ? folded.slice(0, folded.lastIndexOf(".")) : null,
        path: folded,
        members: 0,
        className: modules[folded] || "",
      };
      groups.set(id, group);
      nodes.push(group);
    }
    group.members += 1;
  }
  for (const group of groups.values()) {
    group.sub = `${group.className ? `${group.className} · ` : ""}${group.members} nodes`;
  }
  const edges = new Map(); // "from>to" -> drawn edge (parallel edges are drawn once)
  for (const edge of view.edges) {
    const from = standIn.get(edge.from);
    const to = standIn.get(edge.to);
    if (!from || !to || from === to) continue;
    const key = `${from}>${to}`;
    const known = edges.get(key);
    if (known) known.count += 1;
    else edges.set(key, { key, from, to, count: 1 });
  }
  return { nodes, edges: [...edges.values()], standIn, copies };
}

/** The groups to start collapsed: all of them for a large view, none for a small one. */
export function initialCollapsed(view, modules, threshold) {
  if (view.nodes.length <= threshold) return new Set();
  const collapsed = new Set(groupPaths(view, modules));
  // a folded loop (fold.js) opens on its repetitions, the first of them (the top) unfolded
  for (const path of view.loopPaths || []) {
    collapsed.delete(path);
    collapsed.delete(`${path}.0`);
  }
  return collapsed;
}

/** The collapsed set to draw instead of `wanted` when unfolding that much would draw more than
 * `budget` nodes: groups are opened outermost first, each only if the drawing stays within the
 * budget. Linear in the view. Returns { collapsed, complete, drawn }. */
export function withinBudget(view, modules, wanted, budget) {
  const paths = groupPaths(view, modules); // outermost first
  const known = new Set(paths);
  const parentOf = (path) => {
    for (let p = path; p.includes("."); ) {
      p = p.slice(0, p.lastIndexOf("."));
      if (known.has(p)) return p;
    }
    return null;
  };
  const direct = new Map(paths.map((p) => [p, 0])); // nodes right in a group
  const inner = new Map(paths.map((p) => [p, 0])); // groups right in a group
  let drawn = 0; // with every group folded
  for (const node of view.nodes) {
    if (node.group) direct.set(node.group, direct.get(node.group) + 1);
    else drawn++;
  }
  for (const path of paths) {
    const parent = parentOf(path);
    if (parent) inner.set(parent, inner.get(parent) + 1);
    else drawn++;
  }
  // opening a group whose parent is open draws its contents instead of its one node
  const openCost = (path) => direct.get(path) + inner.get(path) - 1;
  const isOpen = (path, collapsed) => !collapsed.has(path) && (!parentOf(path) || isOpen(parentOf(path), collapsed));
  let full = drawn;
  for (const path of paths) if (isOpen(path, wanted)) full += openCost(path);
  if (full <= budget) return { collapsed: wanted, complete: true, drawn: full };
  const collapsed = new Set(paths);
  for (const path of paths) {
    const parent = parentOf(path);
    if (wanted.has(path) || (parent && collapsed.has(parent)) || drawn + openCost(path) > budget) continue;
    collapsed.delete(path);
    drawn += openCost(path);
  }
  return { collapsed, complete: false, drawn };
}
