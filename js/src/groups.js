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
  for (const node of view.nodes) {
    const folded = collapsedAncestor(node.group, collapsed);
    if (!folded) {
      nodes.push(node);
      standIn.set(node.id, node.id);
      continue;
    }
    const id = GROUP_PREFIX + folded;
    standIn.set(node.id, id);
    let group = groups.get(id);
    if (!group) {
      group = {
        id,
        kind: "group",
        label: folded,
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
  return { nodes, edges: [...edges.values()], standIn };
}

/** The groups to start collapsed: all of them for a large view, none for a small one. */
export function initialCollapsed(view, modules, threshold) {
  if (view.nodes.length <= threshold) return new Set();
  return new Set(groupPaths(view, modules));
}
