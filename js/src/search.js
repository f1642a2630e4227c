// Search: every node whose texts contain the query is a match; all are highlighted, and
// next/previous step through them in reading order ("3 of 7").

/** The ids of the nodes matching `query` (case-insensitive, in a node's label or sub), in the
 * order given by `order(a, b)` on nodes (the caller's reading order), or the graph's. */
export function findMatches(nodes, query, order = null) {
  const text = String(query || "").trim().toLowerCase();
  if (!text) return [];
  const found = nodes.filter((n) => String(n.label ?? "").toLowerCase().includes(text) || String(n.sub ?? "").toLowerCase().includes(text));
  if (order) found.sort(order);
  return found.map((n) => n.id);
}

/** A cursor over the matches: set(matches) starts before the first; next() / previous() move
 * and wrap around, returning the current id. */
export function createSearchCursor() {
  let matches = [];
  let current = -1;
  return {
    get matches() {
      return matches;
    },
    get current() {
      return current >= 0 ? matches[current] : null;
    },
    set(ids) {
      matches = ids.slice();
      current = -1;
    },
    next() {
      if (!matches.length) return null;
      current = (current + 1) % matches.length;
      return matches[current];
    },
    previous() {
      if (!matches.length) return null;
      current = current <= 0 ? matches.length - 1 : current - 1;
      return matches[current];
    },
    /** "3 of 7", "7 matches", "no match" (for a non-empty query) or "". */
    text(query) {
      if (!String(query || "").trim()) return "";
      if (!matches.length) return "no match";
      if (current < 0) return matches.length === 1 ? "1 match" : `${matches.length} matches`;
      return `${current + 1} of ${matches.length}`;
    },
  };
}
